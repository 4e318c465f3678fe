import { randomUUID } from 'node:crypto';
import { type Clock, Conflict, InvalidInput, type Logger, NotFound } from '@platform/kernel';
import {
  type Collection,
  type Doc,
  DuplicateKeyError,
  type Store,
  updateWithRevision,
} from '@platform/store';
import { z } from 'zod';
import type { CatalogueCollections, ModelDoc, ProviderDoc } from './catalogue-store';
import { missingEndpoints } from './deployment-endpoints';
import { acceptingAsIs, type EntryIssue, fieldsOf, issueKey, schemaIssues, writes } from './entry-issues';
import {
  type ModelEntry,
  ModelEntryObjectSchema,
  ModelEntrySchema,
  mergePatch,
  unknownProviders,
} from './model-entry';

/** Who changed the catalogue: a platform administrator, or the operator's credential (internal secret). */
export interface Actor {
  kind: 'platform_admin' | 'operator';
  userId: string | null;
}

/** One catalogue change, kept in the store (`llm_catalogue_audit`). */
export interface AuditDoc extends Doc {
  at: Date;
  actor: Actor;
  action: 'create' | 'update' | 'delete' | 'replace' | 'provider.put' | 'provider.delete';
  /** the model (or, for provider actions, the provider) changed; null for a whole replace */
  model_id: string | null;
  before: unknown;
  after: unknown;
  requestId: string | null;
}

/** A bulk replace under way: the catalogue before it (restored at start if the process died midway). */
interface JournalDoc extends Doc {
  previous: ModelDoc[];
  startedAt: Date;
}

/** Set once the catalogue has been changed through the API: from then on the store is the truth. */
interface MetaDoc extends Doc {
  managedSince: Date;
  /** bumped by every committed change: instances that missed the bus notice compare it */
  version?: number;
}

export const MAX_BULK_ITEMS = 500;
/** a journal older than this belongs to a process that died: it is restored before the next replace */
const STALE_JOURNAL_MS = 10 * 60_000;

export const modelExists = (id: string) =>
  new Conflict(`The catalogue already has a model ${id}`, {
    error: 'MODEL_EXISTS',
    code: 'MODEL_EXISTS',
    extra: { model: id },
  });

/** The bulk replace could not complete; the previous catalogue is whole. Answered as 500. */
export class BulkReplaceFailed extends Error {
  constructor(override readonly cause: unknown) {
    super('The catalogue could not be replaced; the previous catalogue is unchanged');
    this.name = 'BulkReplaceFailed';
  }
}

export const docOf = ({ model_id, ...entry }: ModelEntry, now: Date): ModelDoc => ({
  _id: model_id,
  ...entry,
  source: 'api',
  updatedAt: now,
});

export const entryOf = ({ _id, updatedAt: _u, source: _s, revision: _r, ...rest }: ModelDoc): ModelEntry => ({
  model_id: _id,
  ...rest,
});

const invalidModel = (issues: EntryIssue[]) => {
  const fields = fieldsOf(issues);
  return new InvalidInput(`Invalid model: ${fields.map((i) => `${i.field}: ${i.message}`).join('; ')}`, {
    details: { issues: fields },
  });
};

/**
 * The catalogue's write side. Every change is written to the store, audited (who, when, before and
 * after), then announced with `llm.catalogue.updated` so every instance reloads its in-memory
 * catalogue. A bulk replace is all or nothing: the previous catalogue is journalled first and put
 * back when any write fails.
 */
export class CatalogueAdmin {
  private readonly audit: Collection<AuditDoc>;
  private readonly journal: Collection<JournalDoc>;
  private readonly meta: Collection<MetaDoc>;

  constructor(
    private readonly deps: {
      store: Store;
      collections: CatalogueCollections;
      clock: Clock;
      logger: Logger;
      /** reloads this instance and tells the others (called after every committed change) */
      changed: () => Promise<void>;
    },
  ) {
    this.audit = deps.store.collection<AuditDoc>('llm_catalogue_audit', [{ fields: { at: -1 } }]);
    this.journal = deps.store.collection<JournalDoc>('llm_catalogue_journal');
    this.meta = deps.store.collection<MetaDoc>('llm_catalogue_meta');
  }

  /** whether the catalogue is managed through the API (the gateway file is then not re-applied at start) */
  async managedByApi(): Promise<boolean> {
    return (await this.meta.findOne({ _id: 'models' })) !== null;
  }

  /** the catalogue's change counter (0 before any API change) */
  async version(): Promise<number> {
    return (await this.meta.findOne({ _id: 'models' }))?.version ?? 0;
  }

  /** Puts back the catalogue a bulk replace was replacing when its process died. */
  async recover(): Promise<boolean> {
    const journal = await this.journal.findOne({ _id: 'models' });
    if (!journal) return false;
    await this.restore(journal.previous);
    await this.journal.deleteOne({ _id: 'models' });
    this.deps.logger.warn({ models: journal.previous.length }, 'an interrupted bulk replace was rolled back');
    return true;
  }

  async create(body: unknown, actor: Actor, requestId: string | null): Promise<ModelEntry> {
    const raw = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    if (raw.model_id === undefined || raw.model_id === null || raw.model_id === '')
      throw new InvalidInput('model_id is required', { error: 'MISSING_MODEL_ID', code: 'MISSING_MODEL_ID' });
    if (raw.type === undefined || raw.type === null || raw.type === '')
      throw new InvalidInput('type is required', { error: 'MISSING_TYPE', code: 'MISSING_TYPE' });
    const entry = await this.validate(raw);
    const doc = docOf(entry, this.deps.clock.now());
    try {
      await this.deps.collections.models.insertOne(doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw modelExists(entry.model_id);
      throw err;
    }
    await this.committed(actor, 'create', entry.model_id, null, entry, requestId);
    return entry;
  }

  /** A merge patch, applied to the entry as it stands when written (again if another change went in meanwhile). */
  async update(id: string, patch: unknown, actor: Actor, requestId: string | null): Promise<ModelEntry> {
    if (!(await this.deps.collections.models.findOne({ _id: id }))) throw modelMissing(id);
    if (!patch || typeof patch !== 'object' || Array.isArray(patch))
      throw new InvalidInput('The body must be a JSON object of the members to change');
    const p = patch as Record<string, unknown>;
    if ('model_id' in p && p.model_id !== id)
      throw new InvalidInput('model_id cannot change; create the new id and delete this one', {
        details: { issues: [{ field: 'model_id', message: 'cannot change' }] },
      });
    const updated = await updateWithRevision(this.deps.collections.models, { _id: id }, async (current) => {
      const before = entryOf(current);
      const entry = await this.patched(before, p);
      const { _id, ...doc } = docOf(entry, this.deps.clock.now());
      const gone = removed(before, entry);
      return Object.keys(gone).length ? { $set: doc, $unset: gone } : { $set: doc };
    });
    if (!updated) throw modelMissing(id);
    const entry = entryOf(updated.after);
    await this.committed(actor, 'update', id, entryOf(updated.before), entry, requestId);
    return entry;
  }

  async remove(id: string, actor: Actor, requestId: string | null): Promise<void> {
    const current = await this.deps.collections.models.findOne({ _id: id });
    if (!current) throw modelMissing(id);
    // a failover naming a removed model would fail over to nothing, unseen until its provider fails
    const naming = await this.deps.collections.models.find({ failover: id });
    const others = naming.map((m) => m._id).filter((other) => other !== id);
    if (others.length)
      throw new Conflict(`Models fail over to ${id}; give them another failover (or none) first`, {
        error: 'MODEL_IN_USE',
        code: 'MODEL_IN_USE',
        details: { models: others },
      });
    // a delete that went in meanwhile has removed it: that one is the change, audited once
    if ((await this.deps.collections.models.deleteOne({ _id: id })) === 0) throw modelMissing(id);
    await this.committed(actor, 'delete', id, entryOf(current), null, requestId);
  }

  /** Validates a whole catalogue: INVALID_ITEMS with each bad entry's index, id and issues. */
  async validateAll(items: unknown[]): Promise<ModelEntry[]> {
    const providers = await this.providers();
    const bad: Array<{
      index: number;
      model_id: unknown;
      issues: Array<{ field: string; message: string }>;
    }> = [];
    const entries: ModelEntry[] = [];
    /** each valid entry's place in the list (an item may be anything, `null` included) */
    const indexOf = new Map<ModelEntry, number>();
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const parsed = ModelEntrySchema.safeParse(item);
      const id = item && typeof item === 'object' ? (item as { model_id?: unknown }).model_id : undefined;
      if (!parsed.success) {
        bad.push({ index, model_id: id ?? null, issues: fieldsOf(schemaIssues(parsed.error)) });
        return;
      }
      const issues = [];
      if (seen.has(parsed.data.model_id))
        issues.push({ field: 'model_id', message: 'duplicate in the list' });
      issues.push(...unknownProviders(parsed.data, (p) => providers.has(p)));
      issues.push(
        ...missingEndpoints(parsed.data, (p) => providers.get(p)).map(({ field, message }) => ({
          field,
          message,
        })),
      );
      seen.add(parsed.data.model_id);
      if (issues.length) bad.push({ index, model_id: parsed.data.model_id, issues });
      else {
        entries.push(parsed.data);
        indexOf.set(parsed.data, index);
      }
    });
    entries.forEach((e) => {
      if (e.failover !== undefined && !seen.has(e.failover))
        bad.push({
          index: indexOf.get(e)!,
          model_id: e.model_id,
          issues: [{ field: 'failover', message: `no model named ${e.failover} in the list` }],
        });
    });
    if (bad.length) {
      bad.sort((a, b) => a.index - b.index);
      throw new InvalidInput(`${bad.length} of ${items.length} entries are invalid`, {
        error: 'INVALID_ITEMS',
        code: 'INVALID_ITEMS',
        details: { items: bad },
      });
    }
    return entries;
  }

  /** Replaces the whole catalogue; all or nothing. */
  async replaceAll(
    entries: ModelEntry[],
    actor: Actor,
    requestId: string | null,
  ): Promise<{ deleted: number; inserted: number }> {
    const models = this.deps.collections.models;
    await this.takeJournalSlot();
    let previous: ModelDoc[];
    try {
      previous = await models.find({});
      await this.journal.updateOne({ _id: 'models' }, { $set: { previous } });
    } catch (err) {
      await this.journal.deleteOne({ _id: 'models' }).catch(() => undefined);
      throw new BulkReplaceFailed(err);
    }
    const now = this.deps.clock.now();
    try {
      await models.deleteMany({});
      for (const entry of entries) await models.insertOne(docOf(entry, now));
    } catch (err) {
      this.deps.logger.error({ err }, 'bulk replace failed midway; restoring the previous catalogue');
      try {
        await this.restore(previous);
        await this.journal.deleteOne({ _id: 'models' });
      } catch (restoreErr) {
        // the journal stays: the next start (or the next replace) puts the previous catalogue back
        this.deps.logger.error({ err: restoreErr }, 'could not restore the catalogue; the journal keeps it');
      }
      throw new BulkReplaceFailed(err);
    }
    await this.journal.deleteOne({ _id: 'models' });
    await this.committed(actor, 'replace', null, previous.map(entryOf), entries, requestId);
    return { deleted: previous.length, inserted: entries.length };
  }

  private async takeJournalSlot(): Promise<void> {
    const doc: JournalDoc = { _id: 'models', previous: [], startedAt: this.deps.clock.now() };
    try {
      await this.journal.insertOne(doc);
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw new BulkReplaceFailed(err);
      const existing = await this.journal.findOne({ _id: 'models' });
      if (existing && this.deps.clock.now().getTime() - existing.startedAt.getTime() < STALE_JOURNAL_MS)
        throw new Conflict('Another bulk replace of the catalogue is under way; try again shortly', {
          error: 'BULK_REPLACE_IN_PROGRESS',
          code: 'BULK_REPLACE_IN_PROGRESS',
        });
      await this.recover();
      await this.journal.insertOne(doc);
    }
  }

  private async restore(previous: ModelDoc[]): Promise<void> {
    const models = this.deps.collections.models;
    await models.deleteMany({});
    if (previous.length === 0) return;
    if (models.insertMany) await models.insertMany(previous);
    else for (const doc of previous) await models.insertOne(doc);
  }

  /** checks an entry against the stored providers and models (references must exist, providers have the endpoints) */
  private async validate(raw: unknown): Promise<ModelEntry> {
    const parsed = ModelEntrySchema.safeParse(raw);
    if (!parsed.success) throw invalidModel(schemaIssues(parsed.error));
    const issues = await this.referenceIssues(parsed.data);
    if (issues.length) throw invalidModel(issues);
    return parsed.data;
  }

  /**
   * The entry a merge patch makes, validated once merged. What the stored entry already held that today's rules
   * refuse (a price above a bound added since, a failover whose model was removed since) does not refuse a patch
   * that leaves it alone, and is kept as stored; whatever the patch writes is validated.
   */
  private async patched(before: ModelEntry, patch: Record<string, unknown>): Promise<ModelEntry> {
    const merged = mergePatch(before, patch);
    let held: Promise<Set<string>> | undefined;
    const kept: EntryIssue[] = [];
    /** refuses the issues the stored entry did not have, or that lie where the patch writes; keeps the others */
    const check = async (issues: EntryIssue[]) => {
      if (!issues.length) return;
      held ??= this.heldIssues(before, patch);
      const stored = await held;
      const refused = issues.filter((i) => !stored.has(issueKey(i)));
      if (refused.length) throw invalidModel(refused);
      kept.push(...issues);
    };
    const parsed = ModelEntrySchema.safeParse(merged);
    const issues = parsed.success ? [] : schemaIssues(parsed.error);
    await check(issues);
    const entry = parsed.success ? parsed.data : this.asStored(merged, issues);
    await check(await this.referenceIssues(entry));
    if (kept.length)
      this.deps.logger.warn(
        { model: entry.model_id, kept: fieldsOf(kept) },
        'model patched; values stored before the rules that refuse them are kept as they are',
      );
    return entry;
  }

  /** the stored entry's issues where a patch does not write: they stay as they are, so they do not refuse it */
  private async heldIssues(before: ModelEntry, patch: Record<string, unknown>): Promise<Set<string>> {
    const parsed = ModelEntrySchema.safeParse(before);
    const issues = parsed.success ? [] : schemaIssues(parsed.error);
    issues.push(
      ...(await this.referenceIssues(parsed.success ? parsed.data : this.asStored(before, issues))),
    );
    return new Set(issues.filter((i) => !writes(patch, before, i.path)).map(issueKey));
  }

  /** an entry with the values at the issues' places taken as they are, the rest parsed (defaults applied) */
  private asStored(raw: unknown, issues: EntryIssue[]): ModelEntry {
    const schema = issues.reduce<z.ZodType>((s, i) => acceptingAsIs(s, i.path), ModelEntryObjectSchema);
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw invalidModel(schemaIssues(parsed.error));
    return parsed.data as ModelEntry;
  }

  /** an entry's references that do not hold: unknown providers, endpoints they lack, a failover not in the catalogue */
  private async referenceIssues(entry: ModelEntry): Promise<EntryIssue[]> {
    const providers = await this.providers();
    const issues = [
      ...unknownProviders(entry, (p) => providers.has(p)),
      ...missingEndpoints(entry, (p) => providers.get(p)),
    ];
    if (
      entry.failover !== undefined &&
      entry.failover !== entry.model_id &&
      !(await this.deps.collections.models.findOne({ _id: entry.failover }))
    )
      issues.push({ field: 'failover', message: `no model named ${entry.failover}` });
    return issues.map(({ field, message }) => ({ path: field.split('.'), message }));
  }

  private async providers(): Promise<Map<string, ProviderDoc>> {
    return new Map((await this.deps.collections.providers.find({})).map((p) => [p._id, p]));
  }

  /** audits and announces a change made elsewhere (providers) */
  recordChange(
    actor: Actor,
    action: AuditDoc['action'],
    id: string,
    before: unknown,
    after: unknown,
    requestId: string | null,
  ): Promise<void> {
    return this.committed(actor, action, id, before, after, requestId);
  }

  private async committed(
    actor: Actor,
    action: AuditDoc['action'],
    modelId: string | null,
    before: unknown,
    after: unknown,
    requestId: string | null,
  ): Promise<void> {
    const at = this.deps.clock.now();
    await this.meta.updateOne(
      { _id: 'models' },
      { $setOnInsert: { managedSince: at }, $inc: { version: 1 } },
      { upsert: true },
    );
    await this.audit.insertOne({
      _id: randomUUID(),
      at,
      actor,
      action,
      model_id: modelId,
      before,
      after,
      requestId,
    });
    await this.deps.changed();
  }
}

const modelMissing = (id: string) =>
  new NotFound(`No model named ${id} in the catalogue`, {
    error: 'MODEL_NOT_FOUND',
    code: 'MODEL_NOT_FOUND',
    extra: { model: id },
  });

/** members the patch removed (a merge patch's `null`), for `$unset` */
function removed(before: ModelEntry, after: ModelEntry): Record<string, true> {
  const out: Record<string, true> = {};
  for (const k of Object.keys(before)) if (!(k in after)) out[k] = true;
  return out;
}
