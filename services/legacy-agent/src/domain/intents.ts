import { Conflict, NotFound } from '@platform/kernel';
import { DuplicateKeyError, updateWithRevision } from '@platform/store';
import type { AssistantDoc, IntentDoc } from '../persistence/collections';
import type { IntentInput } from '../routes/schemas';
import { deleteAsRead, insertInPlace, releasePlace, SizeChange, storedBytes } from './assistant-places';
import type { LegacyContext } from './context';
import { newId } from './ids';
import { type Issue, languageIssues, throwIfIssues } from './issues';
import { DEFAULT_SETTINGS, type IntentSettings, type OutputContext } from './model-types';

export type DataChangeListener = (assistantId: string) => Promise<void>;

const LANGUAGE_KEYED = [
  'disambiguationSentence',
  'outputContexts',
  'utterances',
  'parameters',
  'conditionalResponses',
  'settings',
] as const;

const nameKey = (name: string) => name.normalize('NFKC').toLowerCase();

const intentNotFound = (id: string) =>
  new NotFound(`No intent ${id} in this assistant`, { error: 'IntentNotFound' });

/** Intents of one assistant (spec 2.9, 4.3). */
export class Intents {
  constructor(
    private readonly ctx: LegacyContext,
    private readonly onChange: DataChangeListener,
  ) {}

  async list(assistant: AssistantDoc): Promise<IntentDoc[]> {
    return this.ctx.cols.intents.find({ assistantId: assistant._id }, { sort: { createdAt: 1, _id: 1 } });
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
    const doc = this.normalize(
      { _id: id, assistantId: assistant._id, createdAt: now, updatedAt: now },
      { name: `Intent ${id.slice(-12)}`, ...input },
    );
    await this.check(assistant, doc);
    await insertInPlace(
      this.ctx,
      assistant._id,
      'intents',
      config.LEGACY_MAX_INTENTS,
      storedBytes(doc),
      () => this.write(() => cols.intents.insertOne(doc)),
      () => cols.intents.deleteOne({ _id: doc._id }),
    );
    await this.onChange(assistant._id);
    return doc;
  }

  /**
   * Fields present in the body replace the stored ones; absent fields are kept. The whole intent is written
   * back, only over the version it was merged with: a concurrent update of another field is merged again, not lost.
   */
  async update(assistant: AssistantDoc, id: string, input: IntentInput): Promise<IntentDoc> {
    // counted before the write (a growth taken from the budget), given back when nothing was written
    const size = new SizeChange(this.ctx, assistant._id);
    const updated = await size.around(() =>
      this.write(() =>
        updateWithRevision(
          this.ctx.cols.intents,
          { _id: id, assistantId: assistant._id },
          async (current) => {
            const merged = this.normalize(
              { ...current, updatedAt: this.ctx.clock.now() },
              { ...current, ...input },
            );
            await this.check(assistant, merged);
            const { _id, ...fields } = merged;
            await size.count(storedBytes({ ...current, ...fields }) - storedBytes(current));
            return { $set: fields };
          },
        ),
      ),
    );
    if (!updated) throw intentNotFound(id);
    await this.onChange(assistant._id);
    return updated.after;
  }

  async remove(assistant: AssistantDoc, id: string): Promise<{ id: string; deleted: true }> {
    const current = await this.get(assistant, id);
    const filter = { _id: id, assistantId: assistant._id };
    const deleted = await deleteAsRead(this.ctx.cols.intents, filter, current);
    if (deleted) await releasePlace(this.ctx, assistant._id, 'intents', storedBytes(deleted));
    await this.onChange(assistant._id);
    return { id, deleted: true };
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
      createdAt: base.createdAt,
      updatedAt: base.updatedAt,
    };
  }

  /** Rules that need the assistant: its languages, and entities that exist. */
  private async check(assistant: AssistantDoc, doc: IntentDoc): Promise<void> {
    const issues: Issue[] = LANGUAGE_KEYED.flatMap((field) =>
      languageIssues(field, doc[field] as Record<string, unknown>, assistant.languages),
    );
    const tagged = new Set<string>();
    for (const utterances of Object.values(doc.utterances))
      for (const u of utterances) for (const part of u.data) if (part.entity) tagged.add(part.entity);
    if (tagged.size > 0) {
      const entities = await this.ctx.cols.entities.find({ assistantId: assistant._id });
      const known = new Set(entities.map((e) => e.name));
      for (const [lang, utterances] of Object.entries(doc.utterances)) {
        for (const [i, u] of utterances.entries()) {
          for (const [j, part] of u.data.entries()) {
            if (part.entity && !known.has(part.entity))
              issues.push({
                field: `utterances.${lang}.${i}.data.${j}.entity`,
                message: `unknown entity "${part.entity}"; create it first`,
              });
          }
        }
      }
    }
    throwIfIssues(issues);
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
