import { randomUUID } from 'node:crypto';
import { Conflict, NotFound } from '@platform/kernel';
import { DuplicateKeyError, deleteAsRead, updateWithRevision } from '@platform/store';
import type { AssistantDoc, IntentDoc } from '../persistence/collections';
import type { IntentInput } from '../routes/schemas';
import { insertInPlace, releasePlace, resized, SizeChange, storedBytes } from './assistant-places';
import type { LegacyContext } from './context';
import { newId } from './ids';
import { type Issue, languageIssues, throwIfIssues } from './issues';
import { INTENT_LANGUAGE_KEYED } from './language-tags';
import { inCreationOrder, pageById } from './lists';
import { DEFAULT_SETTINGS, type IntentSettings, type OutputContext } from './model-types';
import { type DataChangeListener, recordingChange } from './retraining';

const nameKey = (name: string) => name.normalize('NFKC').toLowerCase();

const intentNotFound = (id: string) =>
  new NotFound(`No intent ${id} in this assistant`, { error: 'IntentNotFound' });

/** Intents of one assistant (spec 2.9, 4.3). */
export class Intents {
  constructor(
    private readonly ctx: LegacyContext,
    private readonly onChange: DataChangeListener,
  ) {}

  /** All of the assistant's intents, in creation order, a batch at a time. */
  all(assistant: AssistantDoc): AsyncIterable<IntentDoc[]> {
    return inCreationOrder(this.ctx.cols.intents, { assistantId: assistant._id });
  }

  /** A page of the assistant's intents in id order, after the id `after`. */
  page(assistant: AssistantDoc, limit: number, after?: string) {
    return pageById(this.ctx.cols.intents, { assistantId: assistant._id }, limit, after);
  }

  async get(assistant: AssistantDoc, id: string): Promise<IntentDoc> {
    // Another assistant's intent is indistinguishable from a missing one.
    const doc = await this.ctx.cols.intents.findOne({ _id: id, assistantId: assistant._id });
    if (!doc) throw intentNotFound(id);
    return doc;
  }

  async create(assistant: AssistantDoc, input: IntentInput): Promise<IntentDoc> {
    const { cols, clock, config } = this.ctx;
    const id = newId();
    const now = clock.now();
    const doc = await this.check(
      assistant,
      this.normalize(
        { _id: id, assistantId: assistant._id, createdAt: now, updatedAt: now },
        { name: `Intent ${id.slice(-12)}`, ...input },
      ),
    );
    return recordingChange(this.onChange, assistant._id, async () => {
      await insertInPlace(
        this.ctx,
        assistant._id,
        'intents',
        config.LEGACY_MAX_INTENTS,
        storedBytes(doc),
        doc._id,
        () => this.write(() => cols.intents.insertOne(doc)),
      );
      const gone = await this.holdEntities(assistant, doc);
      if (gone.size > 0) {
        // an entity it tags was deleted (or renamed) between the check and the write: the intent is not kept; its
        // place is given back by whoever deletes it (a deletion of its id may have come first), with what it holds
        const deleted = await deleteAsRead(cols.intents, { _id: doc._id }, doc);
        if (deleted) await releasePlace(this.ctx, assistant._id, 'intents', storedBytes(deleted));
        await this.onChange(assistant._id); // a training may have read it while it was stored
        throwIfIssues(unknownEntities(doc, gone));
      }
      return doc;
    });
  }

  /**
   * Fields present in the body replace the stored ones; absent fields are kept. The whole intent is written
   * back, only over the version it was merged with: a concurrent update of another field is merged again, not lost.
   */
  async update(assistant: AssistantDoc, id: string, input: IntentInput): Promise<IntentDoc> {
    // counted before the write (a growth taken from the budget), given back when nothing was written
    const size = new SizeChange(this.ctx, assistant._id);
    return recordingChange(this.onChange, assistant._id, async () => {
      const updated = await size.around(() =>
        this.write(() =>
          updateWithRevision(
            this.ctx.cols.intents,
            { _id: id, assistantId: assistant._id },
            async (current) => {
              const merged = await this.check(
                assistant,
                this.normalize({ ...current, updatedAt: this.ctx.clock.now() }, { ...current, ...input }),
              );
              const { _id, ...fields } = merged;
              await size.count(storedBytes({ ...current, ...fields }) - storedBytes(current));
              return { $set: fields };
            },
          ),
        ),
      );
      if (!updated) throw intentNotFound(id);
      const gone = await this.holdEntities(assistant, updated.after, updated.before);
      if (gone.size > 0) {
        await this.restore(assistant, updated.before, updated.after);
        await this.onChange(assistant._id); // a training may have read the refused version while it was stored
        throwIfIssues(unknownEntities(updated.after, gone));
      }
      return updated.after;
    });
  }

  async remove(assistant: AssistantDoc, id: string): Promise<{ id: string; deleted: true }> {
    const current = await this.get(assistant, id);
    const filter = { _id: id, assistantId: assistant._id };
    return recordingChange(this.onChange, assistant._id, async () => {
      const deleted = await deleteAsRead(this.ctx.cols.intents, filter, current);
      if (deleted) await releasePlace(this.ctx, assistant._id, 'intents', storedBytes(deleted));
      return { id, deleted: true as const };
    });
  }

  /** Spec 2.9 with `id`; settings are shown for every language of the assistant, defaults filled. */
  view(doc: IntentDoc, assistant: AssistantDoc) {
    const settings: Record<string, IntentSettings> = {};
    for (const lang of assistant.languages) settings[lang] = { ...DEFAULT_SETTINGS, ...doc.settings[lang] };
    return {
      id: doc._id,
      name: doc.name,
      isWelcome: doc.isWelcome,
      isFallback: doc.isFallback,
      endConversation: doc.endConversation,
      events: doc.events,
      disambiguationSentence: doc.disambiguationSentence,
      inputContexts: doc.inputContexts,
      outputContexts: doc.outputContexts,
      utterances: doc.utterances,
      parameters: doc.parameters,
      conditionalResponses: doc.conditionalResponses,
      settings,
      createdAt: doc.createdAt.toISOString(),
      updatedAt: doc.updatedAt.toISOString(),
    };
  }

  private normalize(
    base: Pick<IntentDoc, '_id' | 'assistantId' | 'createdAt' | 'updatedAt'>,
    input: IntentInput & { name: string },
  ): IntentDoc {
    const outputContexts: Record<string, OutputContext[]> = {};
    for (const [lang, contexts] of Object.entries(input.outputContexts ?? {}))
      outputContexts[lang] = contexts.map((c) => ({
        name: c.name,
        lifespan: c.lifespan ?? this.ctx.config.LEGACY_DEFAULT_CONTEXT_LIFESPAN,
      }));
    return {
      _id: base._id,
      assistantId: base.assistantId,
      name: input.name,
      nameKey: nameKey(input.name),
      isWelcome: input.isWelcome ?? false,
      isFallback: input.isFallback ?? false,
      endConversation: input.endConversation ?? false,
      events: [...new Set(input.events ?? [])],
      disambiguationSentence: input.disambiguationSentence ?? {},
      inputContexts: [...new Set(input.inputContexts ?? [])],
      outputContexts,
      utterances: input.utterances ?? {},
      parameters: input.parameters ?? {},
      conditionalResponses: input.conditionalResponses ?? {},
      settings: input.settings ?? {},
      entityNames: entityNamesOf(input.utterances ?? {}),
      createdAt: base.createdAt,
      updatedAt: base.updatedAt,
    };
  }

  /**
   * Rules that need the assistant: its languages, and entities that exist. Answers the intent with each tag naming
   * its entity as stored: a tag in another Unicode form of the name (`A\u030A` for an entity named with the Ångström
   * sign U+212B, a Hangul syllable for one in conjoining jamo, which NFC composes without a combining mark) names it.
   */
  private async check(assistant: AssistantDoc, doc: IntentDoc): Promise<IntentDoc> {
    const issues: Issue[] = INTENT_LANGUAGE_KEYED.flatMap((field) =>
      languageIssues(field, doc[field] as Record<string, unknown>, assistant.languages),
    );
    let checked = doc;
    if (taggedEntities(doc).size > 0) {
      const entities = await this.ctx.cols.entities.find({ assistantId: assistant._id });
      const known = new Set(entities.map((e) => e.name));
      // one entity at most per form: names equal in NFC are equal in NFKC, the key that keeps them unique
      const byForm = new Map(entities.map((e) => [e.name.normalize('NFC'), e.name]));
      checked = withEntityNames(doc, (name) =>
        known.has(name) ? name : (byForm.get(name.normalize('NFC')) ?? name),
      );
      const unknown = [...taggedEntities(checked)].filter((name) => !known.has(name));
      issues.push(...unknownEntities(checked, new Set(unknown)));
    }
    throwIfIssues(issues);
    return checked;
  }

  /**
   * After an intent's write, the entities it newly tags (those `before` did not) are held: each gets a new revision,
   * which an entity's deletion or rename checking its users before then cannot write over (the store's
   * `deleteAsRead`, `updateWithRevision`); it reads the entity again and, checking again, finds this intent
   * (`Entities.refuseWhenUsed`). The revision is written whatever it was, so no other writer makes a hold try
   * again. One deleted or renamed before its hold is answered among those gone: the intent must not keep tagging it.
   */
  private async holdEntities(
    assistant: AssistantDoc,
    after: IntentDoc,
    before?: IntentDoc,
  ): Promise<Set<string>> {
    const had = before ? taggedEntities(before) : new Set<string>();
    const gone = new Set<string>();
    for (const name of taggedEntities(after)) {
      if (had.has(name)) continue;
      const { matched } = await this.ctx.cols.entities.updateOne(
        { assistantId: assistant._id, name },
        { $set: { revision: randomUUID() } },
      );
      if (matched === 0) gone.add(name);
    }
    return gone;
  }

  /** Puts back the version an update replaced, unless another update wrote over it meanwhile. */
  private async restore(assistant: AssistantDoc, before: IntentDoc, after: IntentDoc): Promise<void> {
    const { _id, revision: _revision, ...fields } = before;
    const restored = await this.ctx.cols.intents.findOneAndUpdate(
      { _id, assistantId: assistant._id, revision: after.revision },
      // named from its utterances: `before` may have been stored without them (decision 0122 §4), `after` has its own
      { $set: { ...fields, entityNames: entityNamesOf(before.utterances), revision: randomUUID() } },
    );
    if (restored) await resized(this.ctx, assistant._id, storedBytes(restored) - storedBytes(after));
  }

  private async write<T>(task: () => Promise<T>): Promise<T> {
    try {
      return await task();
    } catch (err) {
      if (err instanceof DuplicateKeyError)
        throw new Conflict('An intent with this name already exists in the assistant', {
          error: 'IntentNameTaken',
        });
      throw err;
    }
  }
}

/** The names of the entities an intent's utterances tag. */
function taggedEntities(doc: Pick<IntentDoc, 'utterances'>): Set<string> {
  const tagged = new Set<string>();
  for (const utterances of Object.values(doc.utterances))
    for (const u of utterances) for (const part of u.data) if (part.entity) tagged.add(part.entity);
  return tagged;
}

/** The intent with its utterances' tags named by `nameOf`. */
function withEntityNames(doc: IntentDoc, nameOf: (tagged: string) => string): IntentDoc {
  const utterances: IntentDoc['utterances'] = {};
  for (const [lang, list] of Object.entries(doc.utterances))
    utterances[lang] = list.map((u) => ({
      ...u,
      data: u.data.map((part) => (part.entity ? { ...part, entity: nameOf(part.entity) } : part)),
    }));
  return { ...doc, utterances, entityNames: entityNamesOf(utterances) };
}

/** An intent's `entityNames`: the names its utterances tag, in the order they first appear. */
export const entityNamesOf = (utterances: IntentDoc['utterances']): string[] => [
  ...taggedEntities({ utterances }),
];

/** An issue for each part of the intent's utterances that tags one of `names`. */
function unknownEntities(doc: IntentDoc, names: ReadonlySet<string>): Issue[] {
  const issues: Issue[] = [];
  if (names.size === 0) return issues;
  for (const [lang, utterances] of Object.entries(doc.utterances))
    for (const [i, u] of utterances.entries())
      for (const [j, part] of u.data.entries())
        if (part.entity && names.has(part.entity))
          issues.push({
            field: `utterances.${lang}.${i}.data.${j}.entity`,
            message: `unknown entity "${part.entity}"; create it first`,
          });
  return issues;
}
