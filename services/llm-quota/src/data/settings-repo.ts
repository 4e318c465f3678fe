import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Clock, NotFound } from '@platform/kernel';
import { type Update, updateWithRevision } from '@platform/store';
import { type ApiKeyQuota, type OrgUserQuotas, QUOTA_FIELDS } from '../domain/user-limits';
import type {
  ModelRouting,
  OrgSettingsDoc,
  QuotaCollections,
  QuotaPolicy,
  StoredModelGovernance,
} from './collections';

/** A merge patch of the model governance: null resets a member (or all of it). */
export type ModelGovernancePatch = {
  allowed?: string[] | null;
  defaults?: { completions?: string | null; embeddings?: string | null } | null;
  downgrade?: Record<string, string | null> | null;
  by_api_key?: Record<string, string[] | null> | null;
  routing?: ModelRouting | null;
} | null;

export const NO_GOVERNANCE: StoredModelGovernance = { allowed: null, defaults: {}, downgrade: [] };

/**
 * Applies a governance merge patch to the stored governance; TooManyEntries when `by_api_key` would hold more than
 * `maxEntries` keys (and more than it holds), or when the change grows the whole past MAX_GOVERNANCE_BYTES.
 */
export function mergeGovernance(
  current: StoredModelGovernance,
  patch: ModelGovernancePatch,
  maxEntries: number,
): StoredModelGovernance {
  if (patch === null) return NO_GOVERNANCE;
  const next: StoredModelGovernance = {
    allowed: current.allowed,
    defaults: { ...current.defaults },
    downgrade: [...current.downgrade],
  };
  const byKey = { ...current.by_api_key };
  if (patch.by_api_key === null) for (const id of Object.keys(byKey)) delete byKey[id];
  else if (patch.by_api_key) {
    for (const [id, models] of Object.entries(patch.by_api_key)) {
      if (models === null) delete byKey[id];
      else byKey[id] = [...new Set(models)];
    }
    // a map holding more since the maximum was lowered may still shrink, or change, never grow
    const [count, held] = [Object.keys(byKey).length, Object.keys(current.by_api_key ?? {}).length];
    if (count > maxEntries && count > held) throw tooManyEntries('models.by_api_key', maxEntries, held);
  }
  if (Object.keys(byKey).length > 0) next.by_api_key = byKey;
  // the routing is one setting: replaced whole, or removed with null
  const routing = patch.routing === undefined ? current.routing : patch.routing;
  if (routing) next.routing = routing;
  if (patch.allowed !== undefined) next.allowed = patch.allowed === null ? null : [...new Set(patch.allowed)];
  if (patch.defaults === null) next.defaults = {};
  else if (patch.defaults) {
    for (const type of ['completions', 'embeddings'] as const) {
      const value = patch.defaults[type];
      if (value === null) delete next.defaults[type];
      else if (value !== undefined) next.defaults[type] = value;
    }
  }
  if (patch.downgrade === null) next.downgrade = [];
  else if (patch.downgrade) {
    const map = new Map(next.downgrade.map((d) => [d.from, d.to]));
    for (const [from, to] of Object.entries(patch.downgrade)) {
      if (to === null) map.delete(from);
      else map.set(from, to);
    }
    next.downgrade = [...map].map(([from, to]) => ({ from, to }));
  }
  // every gateway reads the governance with each settings refresh: patches may add lists (and downgrade entries),
  // never without bound; measured whole, once every member is merged. One stored larger before may still shrink.
  const bytes = Buffer.byteLength(JSON.stringify(next));
  if (bytes > MAX_GOVERNANCE_BYTES && bytes > Buffer.byteLength(JSON.stringify(current)))
    throw new TooManyEntries(
      'models',
      MAX_GOVERNANCE_BYTES,
      `models may take at most ${MAX_GOVERNANCE_BYTES / 1024} KiB (this change makes ${Math.ceil(bytes / 1024)} KiB)`,
    );
  return next;
}

/** A JSON merge patch (RFC 7396) of the settings: `null` takes a member back to its default (empty, hard_block). */
export interface SettingsPatch {
  policy?: QuotaPolicy | null;
  org_user_quotas?: {
    overrides?: Record<string, { rpm?: number | null; tpm?: number | null } | null> | null;
    by_role?: Record<string, { rpm?: number | null; tpm?: number | null } | null> | null;
    by_api_key?: Record<
      string,
      {
        rpm?: number | null;
        tpm?: number | null;
        monthly_tokens?: number | null;
        monthly_cost?: number | null;
      } | null
    > | null;
  } | null;
  models?: ModelGovernancePatch;
}

/** 404 `OrgDeleted`: auth deleted the organization; nothing is served or changed for it any more. */
export const orgDeleted = (orgSlug: string) =>
  new NotFound(`Organization ${orgSlug} was deleted`, { error: 'OrgDeleted', details: { orgSlug } });

const served = (doc: OrgSettingsDoc): OrgSettingsDoc => {
  if (doc.deletedAt) throw orgDeleted(doc._id);
  return normalise(doc);
};

/** The maps of `org_user_quotas`, patched alike, each entry with its map's limits (`QUOTA_FIELDS`). */
const QUOTA_MAPS = ['overrides', 'by_role', 'by_api_key'] as const satisfies ReadonlyArray<
  keyof OrgUserQuotas
>;

type Limits = Partial<Record<keyof ApiKeyQuota, number>>;

/** A change that would make a part of the settings too large: at most `max` entries (or bytes, as `message` says). */
export class TooManyEntries extends Error {
  constructor(
    /** the part's path in the settings, `org_user_quotas.overrides`, `models.by_api_key`, `models` */
    readonly field: string,
    readonly max: number,
    message = `${field} may hold at most ${max} entries`,
  ) {
    super(message);
  }
}

/**
 * A change that would add entries to the map `field` past `max`, which holds `held`: one holding more already (the
 * maximum was lowered since) says so, and what it may still take.
 */
const tooManyEntries = (field: string, max: number, held: number): TooManyEntries =>
  held > max
    ? new TooManyEntries(
        field,
        max,
        `${field} may hold at most ${max} entries and holds ${held}: a change may remove or replace entries, not add more`,
      )
    : new TooManyEntries(field, max);

/** the most the model governance may take, as JSON */
const MAX_GOVERNANCE_BYTES = 1024 * 1024;

/**
 * Organizations' quota settings. An organization llm-quota has never seen gets the default plan the
 * first time it is seen (a usage event, a read or a change), and keeps that plan until an operator
 * assigns another, even if the default changes later.
 */
export class SettingsRepository {
  constructor(
    private readonly collections: QuotaCollections,
    private readonly clock: Clock,
    private readonly defaultPlan: string,
  ) {}

  /** The settings of an organization, created with the defaults the first time; 404 `OrgDeleted` once deleted. */
  async get(orgSlug: string): Promise<OrgSettingsDoc> {
    const found = await this.collections.settings.findOne({ _id: orgSlug });
    if (found) return served(found);
    const created = await this.collections.settings.findOneAndUpdate(
      { _id: orgSlug },
      { $setOnInsert: this.initial() },
      { upsert: true },
    );
    return served(created!);
  }

  /** The settings of an organization, or null when llm-quota has not seen it yet; 404 `OrgDeleted` once deleted. */
  async find(orgSlug: string): Promise<OrgSettingsDoc | null> {
    const found = await this.collections.settings.findOne({ _id: orgSlug });
    return found ? served(found) : null;
  }

  /**
   * `auth.org.deleted`: the organization's settings are kept, marked deleted (made so when llm-quota had never seen
   * it), and no longer served or changed. Its counters and ledger stay as they are (billing records), under a slug
   * auth never gives out again. Idempotent.
   */
  async markDeleted(orgSlug: string, at: Date): Promise<void> {
    await this.collections.settings.updateOne(
      { _id: orgSlug },
      { $setOnInsert: this.initial(), $min: { deletedAt: at } },
      { upsert: true },
    );
  }

  /**
   * Removes the entries of a credential that no longer exists (`auth.credential.revoked`): a revoked organization API
   * key's `by_api_key` limits and allowed models, a deleted user's `overrides`. Ids are never given out again, so the
   * entries could match nothing; they would only count against the entry caps. A new revision makes a concurrent
   * PATCH (which writes the governance whole) compute again from the settings without them. Returns the
   * organizations whose settings changed.
   */
  async forget(field: 'overrides' | 'by_api_key', id: string): Promise<string[]> {
    // stored entries are keyed by ids of this shape (QuotaKeySchema): another names no field path, nor any entry
    if (!/^[A-Za-z0-9_:@+-]{1,200}$/.test(id)) return [];
    const paths = [`org_user_quotas.${field}.${id}`];
    if (field === 'by_api_key') paths.push(`models.by_api_key.${id}`);
    const changed = new Set<string>();
    for (const path of paths) {
      for (const doc of await this.collections.settings.find({ [path]: { $exists: true } })) {
        await this.collections.settings.updateOne(
          { _id: doc._id },
          { $unset: { [path]: '' }, $set: { revision: randomUUID() } },
        );
        changed.add(doc._id);
      }
    }
    return [...changed];
  }

  /** Makes sure the organization has settings (first sight through a usage event). */
  async ensure(orgSlug: string): Promise<void> {
    await this.collections.settings.updateOne(
      { _id: orgSlug },
      { $setOnInsert: this.initial() },
      { upsert: true },
    );
  }

  async assignPlan(orgSlug: string, plan: string, by: string): Promise<OrgSettingsDoc> {
    await this.get(orgSlug);
    const updated = await this.collections.settings.findOneAndUpdate(
      { _id: orgSlug },
      { $set: { plan, updatedAt: this.clock.now(), updatedBy: by } },
    );
    return normalise(updated!);
  }

  /**
   * Applies a merge patch field by field ($set / $unset on each changed path), computed from the settings as
   * they stand and written only over that version (the store's `updateWithRevision`): a concurrent change is
   * merged in again, never overwritten, and the entry limit holds for the settings as written. A patch that changes
   * nothing (`{}`, or values the settings already hold) writes nothing: `changed` is false and `updated_at` and
   * `updated_by` stay.
   */
  async patch(
    orgSlug: string,
    patch: SettingsPatch,
    by: string,
    maxEntries: number,
  ): Promise<{ settings: OrgSettingsDoc; changed: boolean }> {
    const apply = () =>
      updateWithRevision(this.collections.settings, { _id: orgSlug }, (stored) =>
        this.changes(served(stored), patch, by, maxEntries),
      );
    // an organization seen for the first time gets its defaults first; settings are never deleted
    const updated = (await apply()) ?? (await this.get(orgSlug).then(apply));
    return { settings: normalise(updated!.after), changed: updated!.after !== updated!.before };
  }

  /**
   * The update a merge patch makes of `current`, null when it changes nothing; TooManyEntries when a map would hold
   * more than `maxEntries` (and more than it holds).
   */
  private changes(
    current: OrgSettingsDoc,
    patch: SettingsPatch,
    by: string,
    maxEntries: number,
  ): Update | null {
    const $set: Record<string, unknown> = { updatedAt: this.clock.now(), updatedBy: by };
    const $unset: Record<string, ''> = {};
    if (patch.policy !== undefined) $set.policy = patch.policy ?? 'hard_block';
    if (patch.models !== undefined)
      $set.models = mergeGovernance(current.models ?? NO_GOVERNANCE, patch.models, maxEntries);
    for (const field of QUOTA_MAPS) {
      const entries = patch.org_user_quotas === null ? null : patch.org_user_quotas?.[field];
      if (entries === undefined) continue;
      if (entries === null) {
        // merge patch `null`: the whole map goes
        $set[`org_user_quotas.${field}`] = {};
        continue;
      }
      const keys = new Set(Object.keys(current.org_user_quotas[field]));
      for (const [key, value] of Object.entries(entries)) {
        const path = `org_user_quotas.${field}.${key}`;
        if (value === null) {
          $unset[path] = '';
          keys.delete(key);
          continue;
        }
        const fields = QUOTA_FIELDS[field];
        const merged: Limits = { ...current.org_user_quotas[field][key] };
        for (const limit of fields) {
          if (!(limit in value)) continue;
          const v = (value as Record<string, number | null | undefined>)[limit];
          if (v === null || v === undefined) {
            $unset[`${path}.${limit}`] = '';
            delete merged[limit];
          } else {
            $set[`${path}.${limit}`] = v;
            merged[limit] = v;
          }
        }
        if (fields.every((limit) => merged[limit] === undefined)) {
          // An entry left with no limit is removed rather than kept empty.
          for (const limit of fields) {
            delete $set[`${path}.${limit}`];
            delete $unset[`${path}.${limit}`];
          }
          $unset[path] = '';
          keys.delete(key);
        } else {
          keys.add(key);
        }
      }
      // as for models.by_api_key: one holding more since the maximum was lowered may still shrink, or change
      const held = Object.keys(current.org_user_quotas[field]).length;
      if (keys.size > maxEntries && keys.size > held)
        throw tooManyEntries(`org_user_quotas.${field}`, maxEntries, held);
    }
    const stays = ([path, value]: [string, unknown]) =>
      path === 'updatedAt' || path === 'updatedBy' || isDeepStrictEqual(valueAt(current, path), value);
    if (
      Object.entries($set).every(stays) &&
      Object.keys($unset).every((path) => valueAt(current, path) === undefined)
    )
      return null;
    const update: Update = { $set };
    if (Object.keys($unset).length) update.$unset = $unset;
    return update;
  }

  private initial() {
    const now = this.clock.now();
    return {
      plan: this.defaultPlan,
      policy: 'hard_block' as QuotaPolicy,
      org_user_quotas: { overrides: {}, by_role: {}, by_api_key: {} },
      createdAt: now,
      updatedAt: now,
      updatedBy: null,
    };
  }
}

/** The value at a dotted path of `doc` (the paths `changes` writes: member names hold no dot), undefined when absent. */
function valueAt(doc: object, path: string): unknown {
  let value: unknown = doc;
  for (const name of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  return value;
}

/** Fills what an older document may lack and drops entries with no limit left. */
function normalise(doc: OrgSettingsDoc): OrgSettingsDoc {
  const clean = (field: keyof OrgUserQuotas) => {
    const out: Record<string, Limits> = {};
    for (const [key, value] of Object.entries(doc.org_user_quotas?.[field] ?? {})) {
      const quota: Limits = {};
      for (const limit of QUOTA_FIELDS[field]) {
        const v = (value as Limits | null)?.[limit];
        if (typeof v === 'number') quota[limit] = v;
      }
      if (Object.keys(quota).length > 0) out[key] = quota;
    }
    return out;
  };
  const quotas: OrgUserQuotas = {
    overrides: clean('overrides'),
    by_role: clean('by_role'),
    by_api_key: clean('by_api_key'),
  };
  return {
    ...doc,
    policy: doc.policy ?? 'hard_block',
    org_user_quotas: quotas,
    models: doc.models ?? NO_GOVERNANCE,
  };
}
