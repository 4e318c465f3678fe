import { CliError, type CliSettings, platformBody } from './client';
import type { Outcome } from './commands';
import { failed, gateway, type ModelItem, useOrg } from './gateway-client';

interface Governance {
  allowed: string[] | null;
  defaults?: Record<string, string | undefined>;
  downgrade?: Record<string, string>;
  [k: string]: unknown;
}

/** how many ids one catalogue read names (at most a page: 100) */
const CATALOGUE_READ_IDS = 50;

/**
 * Why models a change named will not serve `org`, though the change is valid (the catalogue is the gateway's, and a
 * model may be allowed before it is added): the catalogue read for those ids only. `typed`: the type a named
 * model must have (a default's); `downgrade`: a downgrade named, whose target must be of its model's type (the
 * gateway passes over one that is not). A catalogue that cannot be read (a token that is not a platform
 * administrator's, a gateway gone) says nothing.
 */
async function catalogueWarnings(
  s: CliSettings,
  org: string,
  named: string[],
  {
    typed = {},
    downgrade,
  }: { typed?: Record<string, string>; downgrade?: { from: string; to: string } } = {},
): Promise<string[]> {
  const ids = [...new Set(named)];
  if (ids.length === 0) return [];
  const models: ModelItem[] = [];
  try {
    // a page's worth of ids at a time: all of them on one page, and a URL of a few kilobytes however many are named
    for (let at = 0; at < ids.length; at += CATALOGUE_READ_IDS) {
      const some = ids.slice(at, at + CATALOGUE_READ_IDS).join(',');
      const answer = await gateway(
        s,
        'GET',
        `/v1/models?orgSlug=all&limit=100&model_ids=${encodeURIComponent(some)}`,
      );
      if (answer.status !== 200) return [];
      const body = platformBody<{ data: ModelItem[]; total: number }>(
        answer,
        (b) => Array.isArray(b.data) && typeof b.total === 'number',
      );
      // more than one page (an older gateway that does not filter by id): which ones are missing is not known
      if (body.data.length < body.total) return [];
      models.push(...body.data);
    }
  } catch (err) {
    if (err instanceof CliError) return [];
    throw err;
  }
  const unusable = ids.flatMap((id) => {
    const model = models.find((m) => m.id === id);
    if (!model)
      return [
        `${id} is not in the catalogue (yet?): requests for it answer MODEL_NOT_FOUND until it is added`,
      ];
    if (model.enabled === false)
      return [
        `${id} is disabled: requests for it answer MODEL_NOT_FOUND until it is enabled (models enable ${id})`,
      ];
    if (Array.isArray(model.org_slugs) && !model.org_slugs.includes(org))
      return [
        `${id} is offered only to other organizations (its org_slugs): requests for it from ${org} answer MODEL_NOT_FOUND`,
      ];
    if (typed[id] && model.type !== typed[id])
      return [
        `${id} is a model of type ${model.type}, not ${typed[id]}: requests using that default answer INVALID_BODY until it is changed`,
      ];
    return [];
  });
  const from = models.find((m) => m.id === downgrade?.from);
  const to = models.find((m) => m.id === downgrade?.to);
  if (from && to && from.type !== to.type)
    unusable.push(
      `${to.id}, which ${from.id} is downgraded to, is a model of type ${to.type}, not ${from.type}: that downgrade is passed over until it is changed`,
    );
  return unusable;
}

/** The organization's defaults and downgrade targets its `allowed` leaves out: the gateway answers MODEL_NOT_ALLOWED. */
function allowedWarnings(org: string, models: Governance): string[] {
  const { allowed } = models;
  if (!Array.isArray(allowed)) return [];
  const warnings = [];
  for (const [concern, id] of Object.entries(models.defaults ?? {}))
    if (id && !allowed.includes(id))
      warnings.push(
        `${id}, the default ${concern} model, is not among the models ${org} allows: requests using that default answer MODEL_NOT_ALLOWED until it is allowed`,
      );
  for (const [from, to] of Object.entries(models.downgrade ?? {}))
    if (!allowed.includes(to))
      warnings.push(
        `${to}, which ${from} is downgraded to, is not among the models ${org} allows: that downgrade is passed over until it is allowed`,
      );
  return warnings;
}

/**
 * Changes an organization's model governance (PATCH {gateway_url}/v1/quotas/settings as that org); one that went to
 * another organization (the session switched between the two calls) fails naming it. A change that is valid but
 * leaves a model it `named` unusable (or a default of another type), a default or downgrade target outside
 * `allowed`, or a downgrade under the hard_block policy, is made and warned about (`warnings` in its data).
 */
async function patchGovernance(
  s: CliSettings,
  org: string,
  models: unknown,
  named: string[],
  expected?: Parameters<typeof catalogueWarnings>[3],
): Promise<Outcome> {
  await useOrg(s, org);
  const answer = await gateway(s, 'PATCH', '/v1/quotas/settings', { models });
  if (answer.status !== 200) throw failed('Changing the organization governance', answer);
  const changed = platformBody<{ orgSlug: string; policy?: unknown; models: Governance }>(
    answer,
    (b) => typeof b.orgSlug === 'string' && typeof b.models === 'object' && b.models !== null,
  );
  // the change goes to the session's active organization, which another command on this session may have switched
  if (changed.orgSlug !== org)
    throw new CliError(
      `The change went to the organization ${changed.orgSlug}, not ${org}: the session's active organization was switched meanwhile (another command, or the web app, on this session). Check both organizations' governance and run it again, one command at a time per session. ${changed.orgSlug} has now: ${JSON.stringify(changed.models)}`,
    );
  const warnings = [
    ...(await catalogueWarnings(s, org, named, expected)),
    ...allowedWarnings(org, changed.models),
  ];
  // the gateway downgrades only under soft_downgrade: under hard_block (every organization's default) a downgrade set
  // is never used
  if (expected?.downgrade && changed.policy === 'hard_block')
    warnings.push(
      `${org}'s policy is hard_block, which never downgrades: ${expected.downgrade.from} is not replaced by ${expected.downgrade.to} until the policy is soft_downgrade (PATCH /v1/quotas/settings {"policy":"soft_downgrade"})`,
    );
  if (warnings.length === 0) return { result: 'updated', data: changed.models };
  return {
    result: 'updated',
    data: { ...changed.models, warnings },
    notes: warnings.map((w) => `warning: ${w}`),
  };
}

export const allowModels = (s: CliSettings, org: string, models: string[] | null) =>
  patchGovernance(s, org, { allowed: models }, models ?? []);

export function setOrgDefault(s: CliSettings, org: string, concern: string, model: string) {
  if (concern !== 'completions' && concern !== 'embeddings')
    throw new CliError('org default <org> <completions|embeddings> <model>', 2);
  return model === 'none'
    ? patchGovernance(s, org, { defaults: { [concern]: null } }, [])
    : patchGovernance(s, org, { defaults: { [concern]: model } }, [model], {
        typed: { [model]: concern === 'completions' ? 'completion' : 'embeddings' },
      });
}

export const setDowngrade = (s: CliSettings, org: string, from: string, to: string) =>
  to === 'none'
    ? patchGovernance(s, org, { downgrade: { [from]: null } }, [])
    : patchGovernance(s, org, { downgrade: { [from]: to } }, [from, to], { downgrade: { from, to } });
