import { Conflict, InvalidInput, NotFound, parseInput } from '@platform/kernel';
import { z } from 'zod';
import { ProviderFileEntrySchema } from '../gateway-file';
import type { ProviderDestinations } from '../providers/http/destinations';
import { type Actor, type CatalogueAdmin, entryOf } from './catalogue-admin';
import type { CatalogueCollections, ProviderDoc } from './catalogue-store';
import { missingEndpoints } from './deployment-endpoints';
import { ProviderHeadersSchema, ProviderKeySchema } from './provider-fields';
import type { SecretBox } from './secret-box';

/** `PUT /v1/providers/{name}`: a provider as the gateway file gives one, its key inline (sealed at rest). */
export const ProviderBodySchema = z
  .object({
    type: z.enum(['openai', 'anthropic', 'mock']),
    baseUrl: z.url().optional(),
    apiKey: ProviderKeySchema.optional(),
    headers: ProviderHeadersSchema.optional(),
    azure: z
      .object({ apiVersion: z.string().min(1) })
      .strict()
      .optional(),
  })
  .strict()
  .meta({ id: 'ProviderInput' });

/** A provider as the API shows it: never its key. */
export const providerView = (p: ProviderDoc) => ({
  name: p._id,
  type: p.type,
  ...(p.baseUrl ? { baseUrl: p.baseUrl } : {}),
  has_api_key: p.apiKeySealed !== undefined,
  ...(p.restricted ? { restricted: true } : {}),
  ...(p.headers ? { header_names: Object.keys(p.headers) } : {}),
  ...(p.azure ? { azure: p.azure } : {}),
  updatedAt: p.updatedAt.toISOString(),
});

/** the members of a stored provider that a replacement without them removes */
const OPTIONAL_FIELDS = ['baseUrl', 'apiKeySealed', 'headers', 'azure', 'restricted'] as const;

/** Providers at run time (platform administrators): added or replaced, listed without keys, removed when unused. */
export class ProviderAdmin {
  constructor(
    private readonly deps: {
      collections: CatalogueCollections;
      box: SecretBox;
      catalogue: CatalogueAdmin;
      /** where a platform administrator's providers may connect */
      destinations: ProviderDestinations;
    },
  ) {}

  async list() {
    return (await this.deps.collections.providers.find({}, { sort: { _id: 1 } })).map(providerView);
  }

  async put(name: string, body: unknown, actor: Actor, requestId: string | null) {
    const input = parseInput(ProviderBodySchema, body ?? {});
    const checked = ProviderFileEntrySchema.safeParse({ name, ...input });
    if (!checked.success)
      throw new InvalidInput(checked.error.issues.map((i) => i.message).join('; '), {
        details: {
          issues: checked.error.issues.map((i) => ({
            field: i.path.join('.') || 'body',
            message: i.message,
          })),
        },
      });
    // A platform administrator's provider reaches public addresses only (decided again at every
    // connection, for host names); the operator's (the file, the operator's credential) is not restricted.
    const restricted = actor.kind === 'platform_admin';
    const refused = restricted && input.baseUrl ? this.deps.destinations.urlRefusal(input.baseUrl) : null;
    if (refused)
      throw new InvalidInput(`baseUrl: ${refused}`, {
        error: 'PROVIDER_DESTINATION_REFUSED',
        code: 'PROVIDER_DESTINATION_REFUSED',
        details: { issues: [{ field: 'baseUrl', message: refused }] },
      });
    const providers = this.deps.collections.providers;
    const before = await providers.findOne({ _id: name });
    await this.checkEndpoints(name, input, before);
    const doc: ProviderDoc = { _id: name, type: input.type, updatedAt: new Date() };
    if (input.baseUrl) doc.baseUrl = input.baseUrl;
    if (input.apiKey) doc.apiKeySealed = this.deps.box.seal(input.apiKey);
    if (input.headers) doc.headers = input.headers;
    if (input.azure) doc.azure = input.azure;
    if (restricted) doc.restricted = true;
    // One write replaces the provider: never a moment without it, and concurrent replacements each land whole.
    const { _id, ...fields } = doc;
    const absent = OPTIONAL_FIELDS.filter((field) => doc[field] === undefined);
    const { upsertedId } = await providers.updateOne(
      { _id: name },
      absent.length
        ? { $set: fields, $unset: Object.fromEntries(absent.map((field) => [field, true] as const)) }
        : { $set: fields },
      { upsert: true },
    );
    const created = upsertedId !== undefined;
    await this.deps.catalogue.recordChange(
      actor,
      'provider.put',
      name,
      before && !created ? providerView(before) : null,
      providerView(doc),
      requestId,
    );
    return { created, provider: providerView(doc) };
  }

  /**
   * A provider's new type (or Azure form) must still have what the models using it call (decision 0105):
   * 400 naming each model, to move before the provider changes. An endpoint the stored provider already lacked (a
   * model written before the check existed) does not refuse a replacement, a key rotated or a kind that lacks it too.
   */
  private async checkEndpoints(
    name: string,
    input: z.infer<typeof ProviderBodySchema>,
    before: ProviderDoc | null,
  ): Promise<void> {
    const issues = (await this.users(name)).flatMap((m) => {
      const lacking = (provider: ProviderDoc | z.infer<typeof ProviderBodySchema>) =>
        missingEndpoints(entryOf(m), (p) => (p === name ? provider : undefined));
      const held = new Set(before ? lacking(before).map((issue) => `${issue.field}\n${issue.endpoint}`) : []);
      return lacking(input)
        .filter((issue) => !held.has(`${issue.field}\n${issue.endpoint}`))
        .map((issue) => ({
          field: input.type === 'openai' ? 'azure' : 'type',
          message: issue.message,
          model_id: m._id,
        }));
    });
    if (issues.length)
      throw new InvalidInput(
        `Models use the provider ${name} for endpoints a provider of this type has not: ${issues.map((i) => i.message).join('; ')}`,
        { details: { issues } },
      );
  }

  /** the stored models one of whose deployments is on the provider */
  private users(name: string) {
    return this.deps.collections.models.find({
      $or: [{ 'provider_config.provider': name }, { 'deployments.provider': name }],
    });
  }

  async remove(name: string, actor: Actor, requestId: string | null) {
    const before = await this.deps.collections.providers.findOne({ _id: name });
    if (!before) throw providerMissing(name);
    const users = await this.users(name);
    if (users.length)
      throw new Conflict(`Models still use the provider ${name}; remove or move them first`, {
        error: 'PROVIDER_IN_USE',
        code: 'PROVIDER_IN_USE',
        details: { models: users.map((m) => m._id) },
      });
    // a delete that went in meanwhile has removed it: that one is the change, audited once
    if ((await this.deps.collections.providers.deleteOne({ _id: name })) === 0) throw providerMissing(name);
    await this.deps.catalogue.recordChange(
      actor,
      'provider.delete',
      name,
      providerView(before),
      null,
      requestId,
    );
  }
}

const providerMissing = (name: string) =>
  new NotFound(`No provider named ${name}`, { error: 'PROVIDER_NOT_FOUND', code: 'PROVIDER_NOT_FOUND' });
