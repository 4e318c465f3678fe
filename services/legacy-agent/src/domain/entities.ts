import { Conflict, NotFound } from '@platform/kernel';
import { DuplicateKeyError, deleteAsRead, updateWithRevision } from '@platform/store';
import type { AssistantDoc, EntityDoc, IntentDoc } from '../persistence/collections';
import type { EntityInput } from '../routes/schemas';
import { insertInPlace, releasePlace, SizeChange, storedBytes } from './assistant-places';
import type { LegacyContext } from './context';
import { newId } from './ids';
import { languageIssues, throwIfIssues } from './issues';
import { inCreationOrder, pageById } from './lists';
import { type DataChangeListener, recordingChange } from './retraining';

const nameKey = (name: string) => name.normalize('NFKC').toLowerCase();

const entityNotFound = (id: string) =>
  new NotFound(`No entity ${id} in this assistant`, { error: 'EntityNotFound' });

/** Entities of one assistant (spec 2.10). */
export class Entities {
  constructor(
    private readonly ctx: LegacyContext,
    private readonly onChange: DataChangeListener,
  ) {}

  /** All of the assistant's entities, in creation order, a batch at a time. */
  all(assistant: AssistantDoc): AsyncIterable<EntityDoc[]> {
    return inCreationOrder(this.ctx.cols.entities, { assistantId: assistant._id });
  }

  /** A page of the assistant's entities in id order, after the id `after`. */
  page(assistant: AssistantDoc, limit: number, after?: string) {
    return pageById(this.ctx.cols.entities, { assistantId: assistant._id }, limit, after);
  }

  async get(assistant: AssistantDoc, id: string): Promise<EntityDoc> {
    const doc = await this.ctx.cols.entities.findOne({ _id: id, assistantId: assistant._id });
    if (!doc) throw entityNotFound(id);
    return doc;
  }

  async create(assistant: AssistantDoc, input: EntityInput): Promise<EntityDoc> {
    const { cols, clock, config } = this.ctx;
    const now = clock.now();
    const doc: EntityDoc = {
      _id: newId(),
      assistantId: assistant._id,
      ...input,
      nameKey: nameKey(input.name),
      createdAt: now,
      updatedAt: now,
    };
    this.check(assistant, doc);
    return recordingChange(this.onChange, assistant._id, async () => {
      await insertInPlace(
        this.ctx,
        assistant._id,
        'entities',
        config.LEGACY_MAX_ENTITIES,
        storedBytes(doc),
        doc._id,
        () => this.write(() => cols.entities.insertOne(doc)),
      );
      return doc;
    });
  }

  /**
   * The entity `merge` makes of the stored one (the route merges the present fields and validates the whole);
   * a renamed entity must not be in use. Written back only over the version it was merged with: a concurrent
   * update of another field is merged again, not lost.
   */
  async update(
    assistant: AssistantDoc,
    id: string,
    merge: (current: EntityDoc) => EntityInput,
  ): Promise<EntityDoc> {
    // counted before the write (a growth taken from the budget), given back when nothing was written
    const size = new SizeChange(this.ctx, assistant._id);
    return recordingChange(this.onChange, assistant._id, async () => {
      const updated = await size.around(() =>
        this.write(() =>
          updateWithRevision(
            this.ctx.cols.entities,
            { _id: id, assistantId: assistant._id },
            async (current) => {
              const merged = merge(current);
              if (merged.name !== current.name) await this.refuseWhenUsed(assistant, current, 'renamed');
              const doc = {
                ...current,
                ...merged,
                nameKey: nameKey(merged.name),
                updatedAt: this.ctx.clock.now(),
              };
              this.check(assistant, doc);
              await size.count(storedBytes(doc) - storedBytes(current));
              const { _id, revision: _revision, ...fields } = doc;
              return { $set: fields };
            },
          ),
        ),
      );
      if (!updated) throw entityNotFound(id);
      return updated.after;
    });
  }

  async remove(assistant: AssistantDoc, id: string): Promise<{ id: string; deleted: true }> {
    const current = await this.get(assistant, id);
    await this.refuseWhenUsed(assistant, current, 'deleted');
    return recordingChange(this.onChange, assistant._id, async () => {
      // a version renamed meanwhile is checked again
      const deleted = await deleteAsRead(
        this.ctx.cols.entities,
        { _id: id, assistantId: assistant._id },
        current,
        (doc) => this.refuseWhenUsed(assistant, doc, 'deleted'),
      );
      if (deleted) await releasePlace(this.ctx, assistant._id, 'entities', storedBytes(deleted));
      return { id, deleted: true as const };
    });
  }

  view(doc: EntityDoc) {
    return {
      id: doc._id,
      name: doc.name,
      automaticallyExtensible: doc.automaticallyExtensible,
      useSynonyms: doc.useSynonyms,
      data: doc.data,
      createdAt: doc.createdAt.toISOString(),
      updatedAt: doc.updatedAt.toISOString(),
    };
  }

  private check(assistant: AssistantDoc, doc: EntityDoc): void {
    throwIfIssues([
      ...languageIssues('automaticallyExtensible', doc.automaticallyExtensible, assistant.languages),
      ...languageIssues('useSynonyms', doc.useSynonyms, assistant.languages),
      ...languageIssues('data', doc.data, assistant.languages),
    ]);
  }

  /**
   * Utterances tag entities by name: removing or renaming a tagged entity would orphan them. Only the intents naming
   * it in `entityNames` are read (decision 0122 §4), and those stored without the field, until start gives it them;
   * each is checked on its utterances. The users are listed in the order the store answers, as before.
   */
  private async refuseWhenUsed(assistant: AssistantDoc, entity: EntityDoc, what: string): Promise<void> {
    const intents = await this.ctx.cols.intents.find({
      assistantId: assistant._id,
      $or: [{ entityNames: entity.name }, { entityNames: { $exists: false } }],
    });
    const users = intents.filter((intent) => tags(intent, entity.name));
    if (users.length > 0)
      throw new Conflict(`Entity "${entity.name}" is used by intents and cannot be ${what}`, {
        error: 'EntityInUse',
        details: { intents: users.map((i) => ({ id: i._id, name: i.name })) },
      });
  }

  private async write<T>(task: () => Promise<T>): Promise<T> {
    try {
      return await task();
    } catch (err) {
      if (err instanceof DuplicateKeyError)
        throw new Conflict('An entity with this name already exists in the assistant', {
          error: 'EntityNameTaken',
        });
      throw err;
    }
  }
}

function tags(intent: IntentDoc, entityName: string): boolean {
  return Object.values(intent.utterances).some((utterances) =>
    utterances.some((u) => u.data.some((part) => part.entity === entityName)),
  );
}
