import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse as parseYaml } from 'yaml';
import {
  type ApiAnswer,
  CliError,
  type CliSettings,
  DEFAULT_TIMEOUT_SECONDS,
  internal,
  platformBody,
} from './client';
import type { Outcome } from './commands';
import { failed, gateway, type ModelItem, useOrg } from './gateway-client';

export async function grantPlatformAdmin(s: CliSettings, userId: string, granted: boolean): Promise<Outcome> {
  const answer = await internal(
    s,
    'auth',
    'PUT',
    `/internal/users/${encodeURIComponent(userId)}/platform-admin`,
    {
      granted,
    },
  );
  if (answer.status !== 200)
    throw failed(granted ? 'Granting platform admin' : 'Revoking platform admin', answer);
  return { result: 'updated', data: answer.body };
}

/**
 * Adds or replaces a provider. The gateway replaces a provider whole, and never shows its key or its header values: run
 * again without them, it would remove the stored ones (every model on it then failing), so that is refused unless
 * `removeApiKey` and `removeHeaders` say so (`removeHeaders`: the stored headers not in `headers` are removed). The
 * outcome's `api_key` says what happened to the key: `set`, `replaced`, `removed` or `none`.
 */
export async function addProvider(
  s: CliSettings,
  name: string,
  options: {
    type: string;
    baseUrl?: string;
    apiKey?: string;
    removeApiKey: boolean;
    headers: string[];
    removeHeaders: boolean;
    azureApiVersion?: string;
  },
): Promise<Outcome> {
  const headers: Record<string, string> = {};
  for (const h of options.headers) {
    const at = h.indexOf('=');
    // its value may be a secret (`Authorization: Bearer …`, `api-key: <base64>==`): only the name it begins with is
    // shown, and what is not a header name (RFC 9110 token) never goes to the gateway, whose refusal would quote it
    if (at <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(h.slice(0, at)))
      throw new CliError(
        `--header wants NAME=VALUE: the one beginning ${JSON.stringify(h.split(/[\s:=]/)[0])} has no = after its name`,
        2,
      );
    headers[h.slice(0, at)] = h.slice(at + 1);
  }
  const listed = await gateway(s, 'GET', '/v1/providers');
  if (listed.status !== 200) throw failed('Listing the providers', listed);
  const stored = providersIn(listed).find((p) => p.name === name);
  const keyed = stored?.has_api_key === true;
  // what the gateway never shows cannot be given back later: its removal is asked for, never a side effect
  const lost = [];
  if (keyed && !options.apiKey && !options.removeApiKey)
    lost.push(
      `The provider ${name} has an API key stored, which providers add without one would remove: give it again with --api-key or --api-key-file, or remove it with --no-api-key.`,
    );
  // (a header's name is the same in any case)
  const given = new Set(Object.keys(headers).map((h) => h.toLowerCase()));
  const unseen = (stored?.header_names ?? []).filter((h) => !given.has(h.toLowerCase()));
  if (unseen.length && !options.removeHeaders)
    lost.push(
      options.headers.length
        ? `The provider ${name} has the headers ${unseen.join(', ')} stored, which providers add without them would remove: give them again with --header, or add --no-headers to keep only the headers given.`
        : `The provider ${name} has the headers ${unseen.join(', ')} stored, which providers add without --header would remove: give them again with --header, or remove them with --no-headers.`,
    );
  if (lost.length) throw new CliError(`${lost.join('\n')}\nNothing was changed.`);
  const answer = await gateway(s, 'PUT', `/v1/providers/${encodeURIComponent(name)}`, {
    type: options.type,
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.headers.length ? { headers } : {}),
    ...(options.azureApiVersion ? { azure: { apiVersion: options.azureApiVersion } } : {}),
  });
  if (answer.status !== 201 && answer.status !== 200) throw failed('Adding the provider', answer);
  return {
    result: answer.status === 201 ? 'created' : 'updated',
    data: {
      ...(answer.body as object),
      api_key: options.apiKey ? (keyed ? 'replaced' : 'set') : keyed ? 'removed' : 'none',
    },
  };
}

/** the providers of `GET /v1/providers` (never their keys) */
const providersIn = (answer: ApiAnswer) =>
  platformBody<{ data: Array<{ name: string; has_api_key?: boolean; header_names?: string[] }> }>(
    answer,
    (b) => Array.isArray(b.data),
  ).data;

export async function listProviders(s: CliSettings): Promise<Outcome> {
  const answer = await gateway(s, 'GET', '/v1/providers');
  if (answer.status !== 200) throw failed('Listing the providers', answer);
  return { result: 'listed', data: providersIn(answer) };
}

export async function removeProvider(s: CliSettings, name: string): Promise<Outcome> {
  const answer = await gateway(s, 'DELETE', `/v1/providers/${encodeURIComponent(name)}`);
  if (answer.status === 204) return { result: 'deleted', data: { name } };
  // (a 404 of another kind is a URL that is not the gateway's: nothing was removed)
  if (answer.status === 404 && (answer.body as { code?: string } | null)?.code === 'PROVIDER_NOT_FOUND')
    return { result: 'absent', data: { name } };
  throw failed('Removing the provider', answer);
}

async function allModels(s: CliSettings): Promise<ModelItem[]> {
  const out: ModelItem[] = [];
  for (let page = 0; ; page++) {
    const answer = await gateway(s, 'GET', `/v1/models?orgSlug=all&limit=100&page=${page}`);
    if (answer.status !== 200) throw failed('Reading the catalogue', answer);
    const body = platformBody<{ data: ModelItem[]; total: number }>(
      answer,
      (b) => Array.isArray(b.data) && typeof b.total === 'number',
    );
    out.push(...body.data);
    if (out.length >= body.total || body.data.length === 0) return out;
  }
}

/** how many times one smoke test waits for the organization's rate (the gateway runs 20 a minute) to let it run */
const RATE_WAITS = 5;

/** LLM_GATEWAY_DEFAULT_TIMEOUT_MS's default, in seconds: how long the gateway waits for a model without timeout_ms */
const GATEWAY_MODEL_TIMEOUT_SECONDS = 60;

/**
 * One smoke test of `model`; one refused for the rate is run again when the gateway's `retry-after` says (at most a
 * minute on). It may take the model's own time limit on top of --timeout: a model that does not answer (a provider
 * outage) is reported failed by the gateway when its time is up, never the whole command timed out before that.
 */
async function smokeTest(
  s: CliSettings,
  model: ModelItem,
  body: { modelId: string; provider?: string },
): Promise<ApiAnswer> {
  const timeoutSeconds =
    (s.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) +
    (model.timeout_ms ? Math.ceil(model.timeout_ms / 1000) : GATEWAY_MODEL_TIMEOUT_SECONDS);
  for (let waits = 0; ; waits++) {
    const answer = await gateway({ ...s, timeoutSeconds }, 'POST', '/v1/test', body);
    if (answer.status !== 429 || answer.retryAfterSeconds === undefined || waits === RATE_WAITS)
      return answer;
    await sleep(Math.min(answer.retryAfterSeconds, 60) * 1000);
  }
}

/**
 * Smoke-tests every model of a provider, as the organization `org` (whose quota is not billed); a model of
 * several deployments is tested on its deployment on that provider.
 */
export async function testProvider(s: CliSettings, name: string, org: string): Promise<Outcome> {
  const models = (await allModels(s)).filter(
    (m) =>
      (m.provider_config?.provider === name || m.deployments?.some((d) => d.provider === name)) &&
      m.enabled !== false,
  );
  if (models.length === 0) throw new CliError(`No enabled model uses the provider ${name}`);
  await useOrg(s, org);
  const results = [];
  for (const m of models) {
    const answer = await smokeTest(s, m, { modelId: m.id, ...(m.deployments ? { provider: name } : {}) });
    // (an error with no body, or a page, from a proxy in front: no fields)
    const body = (answer.body ?? {}) as {
      ok?: boolean;
      latency_ms?: number;
      code?: string;
      response?: { code?: string };
    };
    results.push({
      model: m.id,
      ok: answer.status === 200 && body.ok === true,
      latency_ms: body.latency_ms ?? null,
      ...(body.ok ? {} : { error: body.response?.code ?? body.code ?? answer.status }),
    });
  }
  const failed = results.filter((r) => !r.ok).length;
  if (failed)
    throw new CliError(
      `${failed} of ${results.length} models failed: ${JSON.stringify(results)}`,
      1,
      results,
    );
  return { result: 'passed', data: results };
}

/** Reads a catalogue file: JSON or YAML, `{models: [...]}` or a bare list. */
function readCatalogue(file: string): unknown[] {
  let raw: unknown;
  try {
    const text = readFileSync(file, 'utf8');
    raw = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new CliError(`Cannot read ${file}: ${(err as Error).message}`);
  }
  const models = Array.isArray(raw) ? raw : (raw as { models?: unknown })?.models;
  if (!Array.isArray(models)) throw new CliError(`${file} holds no list of models`);
  // a bulk replace with nothing would remove the whole catalogue, every organization's models with it
  if (models.length === 0)
    throw new CliError(
      `${file} holds no models: importing it would remove every model. Nothing was changed.`,
    );
  return models;
}

export async function importModels(s: CliSettings, file: string): Promise<Outcome> {
  const answer = await gateway(s, 'PUT', '/v1/models', { models: readCatalogue(file) });
  if (answer.status === 200) return { result: 'replaced', data: answer.body };
  throw failed('Importing the catalogue', answer);
}

/** The whole catalogue as entries `models import` takes back. */
export async function exportModels(s: CliSettings, out?: string): Promise<Outcome> {
  const models = (await allModels(s)).map(
    ({ id: _i, object: _o, created: _c, owned_by: _b, ...entry }) => entry,
  );
  if (out) {
    try {
      writeFileSync(out, `${JSON.stringify({ models }, null, 2)}\n`);
    } catch (err) {
      throw new CliError(`Cannot write ${out}: ${(err as Error).message}`);
    }
    return { result: 'exported', data: { file: out, models: models.length } };
  }
  return { result: 'exported', data: { models } };
}

export async function setModelEnabled(s: CliSettings, id: string, enabled: boolean): Promise<Outcome> {
  // encoded: a mistyped id holding `?` or `#` would name another model (the gateway takes `/` encoded or not)
  const answer = await gateway(s, 'PATCH', `/v1/models/${encodeURIComponent(id)}`, { enabled });
  if (answer.status === 200) return { result: 'updated', data: answer.body };
  throw failed(enabled ? 'Enabling the model' : 'Disabling the model', answer);
}

/** An organization's model governance, as `PATCH /v1/quotas/settings` answers it (the members the CLI sets). */
