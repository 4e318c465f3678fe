import { createHash } from 'node:crypto';
import { type NluModel, type NluResult, type NluTrainingSet, TRAINING_REVISION } from '@platform/nlu';
import { DuplicateKeyError } from '@platform/store';
import type { AssistantDoc, EntityDoc, IntentDoc, ModelDoc } from '../persistence/collections';
import type { LegacyContext } from './context';
import { removeOrphanModelBlobs } from './orphan-blobs';
import { retryDelayMs } from './retraining';

/**
 * The adapter between the legacy resources and the NLU engine (@platform/nlu): it turns an assistant's
 * intents and entities into one training set per language, trains in a worker after changes
 * (debounced), persists the serialized models, and hands the current model to Messages. The previous
 * model keeps answering while a new one trains.
 */

// ---- the engine (@platform/nlu) ------------------------------------------------------------------------

export type { NluEntityMatch, NluIntentScore, NluModel, NluTrainingSet } from '@platform/nlu';
export type NluParse = NluResult;

/** What the service needs of the engine; @platform/nlu in production, a scripted one in some tests. */
export interface NluEngine {
  trainModel(set: NluTrainingSet): NluModel | Promise<NluModel>;
  /** trains in a worker process whose threads run `nice` steps below this one (@platform/nlu) */
  trainModelInWorker(set: NluTrainingSet, options: { nice: number; timeoutMs: number }): Promise<NluModel>;
  /**
   * The bytes to store for a model, and a model from them (@platform/nlu: its binary form, gzipped, made by the
   * training worker; docs/decisions/0081).
   */
  storedModelForm(model: NluModel): Promise<Uint8Array>;
  loadStoredModel(bytes: Uint8Array): Promise<NluModel>;
}

// ---- training sets ------------------------------------------------------------------------------

/** One language's training set: intents with sentences in that language, entities with values in it. */
export function toTrainingSet(lang: string, intents: IntentDoc[], entities: EntityDoc[]): NluTrainingSet {
  return {
    lang,
    intents: intents
      .filter((intent) => (intent.utterances[lang]?.length ?? 0) > 0)
      .map((intent) => ({
        id: intent._id,
        name: intent.name,
        utterances: intent.utterances[lang]!.map((u) =>
          u.data.map((part) =>
            part.entity
              ? { text: part.text, entity: part.entity, slot_name: part.slot_name ?? part.entity }
              : { text: part.text },
          ),
        ),
      })),
    entities: entities
      .filter((entity) => entity.data[lang] !== undefined)
      .map((entity) => ({
        name: entity.name,
        automaticallyExtensible: entity.automaticallyExtensible[lang] ?? false,
        useSynonyms: entity.useSynonyms[lang] ?? false,
        values: entity.data[lang]!.map((occ) => ({
          value: occ.value,
          synonyms: entity.useSynonyms[lang] ? (occ.synonyms ?? []) : [],
        })),
      })),
  };
}

export const fingerprintOf = (set: NluTrainingSet): string =>
  createHash('sha256').update(JSON.stringify(set)).digest('hex');

/**
 * A fingerprint of what Messages serve of the assistant's intents (replies, parameters, contexts, events...). Each
 * instance keeps the intents it read under the assistant's revision (dialogue.ts), so a change to them alone whose
 * record for training was lost would be served by none that had read them before, until the next change: the model
 * records keep it, and a pass compares it (`revisionToLearn`). Without what a write changes without changing what is
 * served: its `revision`, and `entityNames`, given to older intents at start without a record (decision 0122 §4).
 */
const servedFingerprintOf = (intents: IntentDoc[]): string =>
  createHash('sha256')
    .update(
      JSON.stringify(intents.map(({ revision: _revision, entityNames: _entityNames, ...served }) => served)),
    )
    .digest('hex');

// ---- models -------------------------------------------------------------------------------------

interface CachedModel {
  model: NluModel | null;
  revision: number;
  fingerprint: string;
  /** when the store was last asked for a newer model (ms), for models that fell behind */
  checkedAt: number;
}

interface TrainingState {
  timer?: unknown;
  /** when the first change of the current burst arrived (ms) */
  burstStart?: number;
  /** in the queue of assistants whose turn is due */
  queued: boolean;
  /** its turn, under way */
  running?: Promise<void>;
  /** the language its pass over its languages goes on with (an index; 0: the next turn begins a pass) */
  passAt: number;
  /** a change arrived since its pass began: train again afterwards */
  again: boolean;
  /** resolved after each turn of the assistant */
  waiters: Array<() => void>;
  /** its turns in a row that the store failed: the next one comes after retryDelayMs of them, at `retryAt` */
  storeFailures: number;
  retryAt?: Date;
}

const modelKey = (assistantId: string, lang: string) => `${assistantId}:${lang}`;
/** the blob of a model: its key and its training set's fingerprint, so a record never names another set's model */
const blobOf = (key: string, fingerprint: string) => `${key}:${fingerprint}`;
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
/** what a training under way gives when the service stops */
const STOPPED = Symbol('stopped');

/** A training the service will not run (too large): its message is the assistant's to read. */
class TrainingRefused extends Error {}

/**
 * A failure of the engine (its training, or the stored form of its model), which is not tried again (a training may
 * hold the one queue up to LEGACY_TRAINING_TIMEOUT_SECONDS); any other failure of a turn is the store's, whatever its
 * type (a blob write on a full disk fails with the file system's error, not `Unavailable`), and is tried again.
 */
class EngineFailed extends Error {}

const byEngine = async <T>(work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (err) {
    throw new EngineFailed('the engine failed', { cause: err });
  }
};

/**
 * How a language's part of a turn ended: `trained` (it held the one training: the other assistants' turns come before
 * the next language), `skipped` (nothing was trained: its model was current, it has no sentences, or it was refused),
 * `gone` (the service stopped, or the assistant was removed).
 */
type LanguageTurn = 'trained' | 'skipped' | 'gone';

export interface TrainingStatus {
  upToDate: boolean;
  /** why the last training of these intents and entities failed (the errors of the languages), while not up to date */
  error: string | null;
  /** the revision of the intents and entities (bumped by every change) */
  revision: number;
  /** per language: the revision its current model learnt, and why its last training failed while it is behind */
  languages: Record<
    string,
    {
      revision: number;
      hasModel: boolean;
      trainedAt: string | null;
      trainingMs: number | null;
      error: string | null;
    }
  >;
}

export class Understanding {
  private readonly cache = new Map<string, CachedModel>();
  /** stored models being loaded, by model key */
  private readonly loading = new Map<string, Promise<CachedModel | null>>();
  private readonly training = new Map<string, TrainingState>();
  /**
   * Why the last training of a language failed or was refused, by model key (cleared by the next pass of its assistant,
   * which tries it again): Messages in it stop waiting for a model, and its status says why. The assistant's other
   * languages train all the same.
   */
  private readonly failures = new Map<string, string>();
  /** model keys whose stored model could not be loaded (damaged, or from an incompatible host): retrained */
  private readonly unloadable = new Set<string>();
  /**
   * One training at a time (the machine's cores also answer Messages), shared in turns: the assistants whose training
   * is due, each once (the changes made while it waits are read when its turn comes), served in order, one language
   * a turn; an assistant with more languages to train, or changed during its turn, goes back to the end (`nextTurn`).
   */
  private readonly ready: string[] = [];
  /** the assistant whose turn is under way */
  private current: string | undefined;
  /** assistants start found behind, then the others it checks, which enter the turns one at a time (`admitBehind`) */
  private readonly behind: string[] = [];
  /** the one of them in the turns now */
  private behindNow: string | undefined;
  private stopped = false;
  /** what `stop()` calls: each ends a wait for a training under way (its worker ends with the process) */
  private readonly stopWaiters = new Set<() => void>();

  constructor(
    private readonly ctx: LegacyContext,
    private readonly engine: NluEngine,
  ) {}

  /**
   * Retrains assistants whose stored models are behind their data (a crash before training, say), and those whose
   * record names no blob of its training set: models an earlier version stored in pieces of a collection (decision
   * 0089), whose pieces are removed, or wrote after a rollback over a record of this version, and models an older
   * TRAINING_REVISION of the engine made (they answer until then). Blobs no record names are removed (orphan-blobs.ts).
   * The other assistants' turns come after theirs, never-changed ones too, to find a change whose record for training a
   * stopped process was still trying (its revision says the models are current, or that there is nothing to learn;
   * their intents and entities say otherwise: `revisionToLearn`); a turn that finds none trains nothing. They all enter
   * the turns one at a time: a new assistant's first model, or a change, waits for one of them, not for the whole
   * platform's, and they are all retrained however busy the developers of others keep the queue.
   */
  async start(): Promise<void> {
    const { cols } = this.ctx;
    const assistants = await cols.assistants.find({});
    const models = await this.withoutUnspokenLanguages(
      await this.withoutRemovedAssistants(await cols.models.find({}), new Set(assistants.map((a) => a._id))),
      assistants,
    );
    const trained = new Map(models.map((m) => [m._id, m.revision]));
    for (const model of models) {
      if (!model.hasModel) continue;
      if (model.blob !== blobOf(model._id, model.fingerprint)) {
        this.unloadable.add(model._id);
        trained.delete(model._id);
      }
      // made by an older engine's training: it answers until its retraining (a new fingerprint) replaces it
      if ((model.trainingRevision ?? 1) < TRAINING_REVISION) trained.delete(model._id);
    }
    await cols.olderModelPieces.deleteMany({});
    await removeOrphanModelBlobs(this.ctx, models);
    const checked: string[] = [];
    for (const assistant of assistants) {
      // one never changed has no model to be behind with
      const behind =
        assistant.dataRevision > 0 &&
        assistant.languages.some(
          (lang) => (trained.get(modelKey(assistant._id, lang)) ?? -1) < assistant.dataRevision,
        );
      if (behind) this.behind.push(assistant._id);
      else checked.push(assistant._id);
    }
    this.behind.push(...checked);
    this.admitBehind();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const stopWaiting of this.stopWaiters) stopWaiting();
    for (const state of this.training.values()) this.ctx.timers.clear(state.timer);
    await Promise.all([...this.training.values()].map((s) => s.running?.catch(() => undefined)));
    for (const state of this.training.values()) for (const wake of state.waiters.splice(0)) wake();
  }

  /**
   * Where training stands: `upToDate` once every language's model learnt the current intents and
   * entities (until then the previous model answers).
   */
  async status(assistant: AssistantDoc): Promise<TrainingStatus> {
    const models = await this.ctx.cols.models.find({ assistantId: assistant._id });
    const languages: TrainingStatus['languages'] = {};
    for (const lang of assistant.languages) {
      const model = models.find((m) => m.lang === lang);
      const revision = model?.revision ?? 0;
      const error =
        revision < assistant.dataRevision ? (this.failures.get(modelKey(assistant._id, lang)) ?? null) : null;
      languages[lang] = model
        ? {
            revision,
            hasModel: model.hasModel,
            trainedAt: model.trainedAt.toISOString(),
            trainingMs: model.trainingMs,
            error,
          }
        : { revision, hasModel: false, trainedAt: null, trainingMs: null, error };
    }
    const upToDate = Object.values(languages).every((l) => l.revision >= assistant.dataRevision);
    const errors = Object.values(languages).flatMap((l) => (l.error ? [l.error] : []));
    const state = this.training.get(assistant._id);
    if (!upToDate && state?.retryAt && state.storeFailures > 0) {
      // a language's error says what the store failed, else it failed before any language
      const why =
        errors.length > 0 ? '' : 'the training could not read the intents and entities (the store failed); ';
      errors.push(`${why}it is tried again at ${state.retryAt.toISOString()}`);
    }
    return { upToDate, revision: assistant.dataRevision, languages, error: errors.join('; ') || null };
  }

  /** After intents or entities change: train once the burst of changes is over. */
  schedule(assistantId: string, debounceMs = this.ctx.config.LEGACY_RETRAIN_DEBOUNCE_MS): void {
    if (this.stopped) return;
    const state = this.stateOf(assistantId);
    if (state.running || state.queued) {
      // a queued turn that begins a pass reads the change; one that goes on with a pass trains again after it
      state.again = true;
      return;
    }
    const timers = this.ctx.timers;
    const now = timers.now();
    state.burstStart ??= now;
    const latest = state.burstStart + this.ctx.config.LEGACY_RETRAIN_MAX_DELAY_MS;
    timers.clear(state.timer);
    state.timer = timers.set(() => this.run(assistantId), Math.max(0, Math.min(debounceMs, latest - now)));
  }

  /** How many assistants have a training queued or running in this process. */
  queuedTrainings(): number {
    let n = 0;
    for (const state of this.training.values()) if (state.queued || state.running) n++;
    return n;
  }

  /** Whether all the assistant has in this process is a turn the store failed, waiting to be tried again. */
  private waitsForStore(assistantId: string): boolean {
    const state = this.training.get(assistantId);
    return !!state && state.storeFailures > 0 && state.timer !== undefined && !state.queued && !state.running;
  }

  /** Whether the assistant has a training scheduled, queued or running in this process. */
  isTraining(assistantId: string): boolean {
    const state = this.training.get(assistantId);
    return !!state && (state.timer !== undefined || state.queued || state.running !== undefined);
  }

  /** Resolves after the assistant's current or next turn (one language trained), or after `timeoutMs`. */
  async trained(assistantId: string, timeoutMs: number): Promise<void> {
    if (!this.isTraining(assistantId)) return;
    const state = this.stateOf(assistantId);
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      // a waiter that gives up leaves the list: messages waiting out a long training do not pile up in it
      const timer = setTimeout(() => {
        const at = state.waiters.indexOf(wake);
        if (at !== -1) state.waiters.splice(at, 1);
        resolve();
      }, timeoutMs);
      state.waiters.push(wake);
    });
  }

  /**
   * Drops everything held for a removed assistant. Its turn will not come: the messages waiting for its first model
   * answer now, and the next assistant start found behind enters the turns if it was the one in them.
   */
  forget(assistantId: string): void {
    const state = this.training.get(assistantId);
    if (state) this.ctx.timers.clear(state.timer);
    this.training.delete(assistantId);
    const queued = this.ready.indexOf(assistantId);
    if (queued !== -1) this.ready.splice(queued, 1);
    this.dropFailures(assistantId);
    for (const key of this.cache.keys()) if (key.startsWith(`${assistantId}:`)) this.cache.delete(key);
    for (const wake of state?.waiters.splice(0) ?? []) wake();
    if (this.behindNow === assistantId) {
      this.behindNow = undefined;
      this.admitBehind();
    }
  }

  private dropFailures(assistantId: string): void {
    for (const key of this.failures.keys()) if (key.startsWith(`${assistantId}:`)) this.failures.delete(key);
  }

  /**
   * The model that answers for the assistant in `lang`: the newest one available, even while a newer
   * one trains. Before the assistant's first model exists it waits for it until `deadline` (ms since the epoch: a
   * message's arrival plus LEGACY_FIRST_MODEL_WAIT_MS); null means there is nothing to classify with (no sentences in
   * that language, or still training).
   */
  async modelFor(assistant: AssistantDoc, lang: string, deadline: number): Promise<NluModel | null> {
    const key = modelKey(assistant._id, lang);
    let cached = this.cached(key) ?? (await this.loadStored(assistant._id, lang));
    if (cached && cached.revision < assistant.dataRevision)
      cached = await this.catchUp(assistant, lang, cached);
    if (cached?.model) return cached.model;
    if (assistant.dataRevision === 0 || (cached && cached.revision >= assistant.dataRevision)) return null;
    // No model yet (a brand-new assistant, or a language that just got its first sentences): wait for
    // the training that makes one, scheduling it if this process has none (after a restart, say).
    let scheduled = false;
    for (;;) {
      // nothing trains, or only a turn the store failed waits to be tried again: this message tries it now
      if (!this.isTraining(assistant._id) || this.waitsForStore(assistant._id)) {
        // After a failed training of its language a message starts no other (each would hold the one queue as long,
        // up to LEGACY_TRAINING_TIMEOUT_SECONDS): the next change, or a restart, trains again.
        if (this.failures.has(key)) return null;
        // Nor after the one it started ended without a model (the store could not read the assistant's data, say):
        // it would start one after another until its deadline.
        if (scheduled) return null;
        // removed meanwhile (which ended the wait): nothing is to train
        if (!(await this.ctx.cols.assistants.findOne({ _id: assistant._id }))) return null;
        this.schedule(assistant._id, 0);
        scheduled = true;
      }
      await this.trained(assistant._id, deadline - Date.now());
      cached = this.cached(key) ?? (await this.loadStored(assistant._id, lang));
      if (cached?.model) return cached.model;
      if (cached && cached.revision >= assistant.dataRevision) return null;
      if (Date.now() >= deadline || this.stopped || this.failures.has(key)) return null;
    }
  }

  private cached(key: string): CachedModel | undefined {
    const cached = this.cache.get(key);
    if (cached) this.remember(key, cached);
    return cached;
  }

  /** A model behind the data: if another instance trained a newer one, load it; if nobody will, train. */
  private async catchUp(assistant: AssistantDoc, lang: string, cached: CachedModel): Promise<CachedModel> {
    if (this.isTraining(assistant._id)) return cached;
    const now = Date.now();
    if (now - cached.checkedAt < 1_000) return cached;
    cached.checkedAt = now;
    const stored = await this.ctx.cols.models.findOne({ _id: modelKey(assistant._id, lang) });
    if (stored && stored.revision > cached.revision) {
      if (stored.fingerprint === cached.fingerprint) {
        cached.revision = stored.revision; // retrained to the same set: nothing to load
        return cached;
      }
      return (await this.loadStored(assistant._id, lang)) ?? cached;
    }
    const quietMs = this.ctx.clock.now().getTime() - assistant.updatedAt.getTime();
    // not after this process's own training of the language failed: a message would start it again every second
    const failed = this.failures.has(modelKey(assistant._id, lang));
    if (quietMs > this.ctx.config.LEGACY_RETRAIN_MAX_DELAY_MS + 30_000 && !failed)
      this.schedule(assistant._id, 0);
    return cached;
  }

  private stateOf(assistantId: string): TrainingState {
    let state = this.training.get(assistantId);
    if (!state) {
      state = { queued: false, passAt: 0, again: false, waiters: [], storeFailures: 0 };
      this.training.set(assistantId, state);
    }
    return state;
  }

  /** The next assistant start found behind (or checks) enters the turns once the previous one has had its last. */
  private admitBehind(): void {
    if (this.stopped || this.behindNow !== undefined) return;
    this.behindNow = this.behind.shift();
    if (this.behindNow !== undefined) this.schedule(this.behindNow, 0);
  }

  /** Its debounce over: the assistant's turn is due. */
  private run(assistantId: string): void {
    const state = this.stateOf(assistantId);
    state.timer = undefined;
    state.burstStart = undefined;
    this.enqueue(assistantId);
  }

  /** Queues the assistant's turn at the end, or `first` (the rest of a pass a message waits for). */
  private enqueue(assistantId: string, first = false): void {
    const state = this.stateOf(assistantId);
    if (state.running) state.again = true;
    else if (!state.queued) {
      state.queued = true;
      if (first) this.ready.unshift(assistantId);
      else this.ready.push(assistantId);
    }
    this.nextTurn();
  }

  /**
   * Starts the next turn when none is under way: that of the first assistant a message waits for (its first model in a
   * language: the others have a model answering, or nobody waiting), else that of the first in the queue.
   */
  private nextTurn(): void {
    if (this.stopped || this.current !== undefined) return;
    const awaited = this.ready.findIndex((id) => (this.training.get(id)?.waiters.length ?? 0) > 0);
    const [assistantId] = this.ready.splice(Math.max(awaited, 0), 1);
    if (assistantId === undefined) return;
    const state = this.stateOf(assistantId);
    state.queued = false;
    if (state.passAt === 0) {
      state.again = false; // a pass reads every change made until now
      // and tries every language again: a message in one that failed waits for it, as for the others
      this.dropFailures(assistantId);
    }
    this.current = assistantId;
    state.running = this.train(assistantId, state.passAt)
      .then((next) => {
        state.passAt = next ?? 0;
        state.storeFailures = 0;
      })
      .catch((err) => {
        // the store failed (the assistant or its data not read, or a model not read or stored; the engine's failures
        // stay the language's, in `train`): the turn comes again later (`retryLater`)
        state.passAt = 0;
        state.storeFailures++;
        this.ctx.logger.error({ err, assistantId }, 'training failed');
      })
      .finally(() => {
        state.running = undefined;
        this.current = undefined;
        // the messages woken wait again if their language is still to come (in this pass, or in the one a change
        // made meanwhile begins): it goes on first for them
        const awaited = state.waiters.length > 0;
        for (const wake of state.waiters.splice(0)) wake();
        const held = this.training.get(assistantId) === state;
        if (held && (state.passAt > 0 || (state.again && awaited))) this.enqueue(assistantId, awaited);
        else if (held && state.again) this.schedule(assistantId, 0);
        else if (held && state.storeFailures > 0) this.retryLater(assistantId, state);
        else if (held && !state.timer) this.training.delete(assistantId);
        // removed during its turn (`forget`): a failure the turn recorded afterwards is not kept for good
        else if (!held) this.dropFailures(assistantId);
        if (this.behindNow === assistantId && state.passAt === 0) this.behindNow = undefined;
        this.admitBehind();
        this.nextTurn();
      });
  }

  /**
   * A turn the store failed comes again once it may be back, without waiting for a change or a message: after a wait
   * that doubles with each such turn in a row, so a long outage starts no turn in a loop. A change made meanwhile
   * trains after its own debounce instead.
   */
  private retryLater(assistantId: string, state: TrainingState): void {
    if (this.stopped) return;
    const delayMs = retryDelayMs(state.storeFailures);
    state.retryAt = new Date(this.ctx.clock.now().getTime() + delayMs);
    state.timer = this.ctx.timers.set(() => this.run(assistantId), delayMs);
  }

  /**
   * One turn of the assistant's pass over its languages, from the `from`th: languages whose model is current are
   * brought to the revision, and the first that is not is trained. A language refused or failed keeps its previous
   * model, and the pass goes on with the others. The index of the language the pass goes on with, or undefined when
   * it is over.
   */
  private async train(assistantId: string, from: number): Promise<number | undefined> {
    const { cols, logger } = this.ctx;
    const assistant = await cols.assistants.findOne({ _id: assistantId });
    if (!assistant) {
      this.forget(assistantId);
      return undefined;
    }
    // Read the revision before the data: a change made meanwhile bumps it and trains again.
    const [intents, entities] = await Promise.all([
      cols.intents.find({ assistantId }, { sort: { createdAt: 1, _id: 1 } }),
      cols.entities.find({ assistantId }, { sort: { createdAt: 1, _id: 1 } }),
    ]);
    const sets = assistant.languages.map((lang) => toTrainingSet(lang, intents, entities));
    const served = servedFingerprintOf(intents);
    const revision =
      from === 0
        ? await this.revisionToLearn(assistant, sets, served, intents.length + entities.length > 0)
        : assistant.dataRevision;
    // never changed (a start's check): nothing to learn
    if (revision === 0) return undefined;
    for (let at = from; at < assistant.languages.length; at++) {
      const lang = assistant.languages[at]!;
      const key = modelKey(assistantId, lang);
      let turn: LanguageTurn;
      try {
        turn = await this.trainLanguage(assistantId, lang, revision, sets[at]!, served);
        this.failures.delete(key);
      } catch (err) {
        if (err instanceof TrainingRefused) {
          this.failures.set(key, err.message);
          logger.warn({ assistantId, lang, reason: err.message }, 'training refused');
          turn = 'skipped';
        } else if (err instanceof EngineFailed) {
          this.failures.set(
            key,
            `the training in ${lang} failed; its previous model answers, or the fallback without one`,
          );
          logger.error({ err: err.cause, assistantId, lang }, 'training failed');
          turn = 'trained'; // it held the training as long as a model would (a worker stopped at its timeout, say)
        } else {
          // the store, not this language: the turn is tried again (`retryLater`); meanwhile Messages in it stop waiting
          this.failures.set(key, `the store failed while the model in ${lang} was read or stored`);
          throw err;
        }
      }
      if (turn === 'gone') return undefined;
      // the other assistants' turns come before its next language
      if (turn === 'trained' && at + 1 < assistant.languages.length) return at + 1;
    }
    return undefined;
  }

  /**
   * The revision a pass trains to: the assistant's, unless a model is recorded as having learnt it while it learnt other
   * intents and entities, or while other intents were served (`served`: a change of replies only, which trains
   * nothing). A change was then stored without its record for training (the store refused that step and the process
   * trying it again stopped, or a process died between the two): it is recorded now, so the status says the models are
   * behind until they learn it, and every instance loads the model trained on it, and the intents, instead of keeping
   * its own, which its revision would call current. Every change is recorded after it is stored: at revision 0, any
   * intent or entity (`anyData`) is an assistant's first change, whose record was lost.
   */
  private async revisionToLearn(
    assistant: AssistantDoc,
    sets: NluTrainingSet[],
    served: string,
    anyData: boolean,
  ): Promise<number> {
    const { cols, clock, logger } = this.ctx;
    const records: ModelDoc[] = await cols.models.find({ assistantId: assistant._id });
    const unrecorded =
      assistant.dataRevision === 0
        ? anyData
        : sets.some((set) => {
            const record = records.find((m) => m.lang === set.lang);
            return (
              record !== undefined &&
              record.revision >= assistant.dataRevision &&
              (record.fingerprint !== fingerprintOf(set) ||
                (record.servedFingerprint !== undefined && record.servedFingerprint !== served))
            );
          });
    if (!unrecorded) return assistant.dataRevision;
    logger.warn(
      { assistantId: assistant._id },
      'a change was stored but never recorded for training; recorded now',
    );
    // over the revision read: a change recorded since needs no other record (it makes its own pass)
    const recorded = await cols.assistants.findOneAndUpdate(
      { _id: assistant._id, dataRevision: assistant.dataRevision },
      { $inc: { dataRevision: 1 }, $set: { updatedAt: clock.now() } },
    );
    return recorded?.dataRevision ?? assistant.dataRevision;
  }

  /**
   * Brings the assistant's model in `lang` to `revision`: kept if it learnt `set` already, else trained on it and
   * stored; its record keeps `servedFingerprint`, what Messages serve of the intents read with `set`. Throws
   * TrainingRefused for a set too large to train.
   */
  private async trainLanguage(
    assistantId: string,
    lang: string,
    revision: number,
    set: NluTrainingSet,
    servedFingerprint: string,
  ): Promise<LanguageTurn> {
    const { cols, logger } = this.ctx;
    const { LEGACY_MAX_TRAINING_SENTENCES: maxSentences, LEGACY_TRAINING_TIMEOUT_SECONDS: timeout } =
      this.ctx.config;
    const fingerprint = fingerprintOf(set);
    const key = modelKey(assistantId, lang);
    const stored: ModelDoc | null = await cols.models.findOne({ _id: key });
    const current =
      stored?.fingerprint === fingerprint && (stored.trainingRevision ?? 1) >= TRAINING_REVISION;
    // kept whatever its size: it may have learnt its sentences before LEGACY_MAX_TRAINING_SENTENCES was lowered
    if (stored && current && !this.unloadable.has(key)) {
      // in memory before the record: once the record says so (the status: up to date), this instance answers with it
      const cached = this.cache.get(key);
      if (cached?.fingerprint === fingerprint) cached.revision = Math.max(cached.revision, revision);
      // another instance trained the stored model (on a change this one could not record, say): the next message
      // loads it, instead of the older model here answering as if it had learnt the change
      else this.cache.delete(key);
      // only over the record read: another instance may have recorded a model of newer data since
      if (stored.revision < revision)
        await cols.models.updateOne(
          { _id: key, fingerprint, revision: { $lt: revision } },
          { $set: { revision, servedFingerprint } },
        );
      // written by an earlier version: given what is served at its revision once, so that a change lost from now on is
      // found (one that differs at the same revision was found by `revisionToLearn`, which is not overwritten here)
      else if (stored.revision === revision && stored.servedFingerprint === undefined)
        await cols.models.updateOne(
          { _id: key, fingerprint, revision, servedFingerprint: { $exists: false } },
          { $set: { servedFingerprint } },
        );
      return 'skipped';
    }
    // one training at a time serves every assistant: none may hold it for long (decision 0021)
    const sentences = set.intents.reduce((n, intent) => n + intent.utterances.length, 0);
    if (sentences > maxSentences)
      throw new TrainingRefused(
        `${sentences} training sentences in ${lang}, more than the ${maxSentences} a model is trained on (LEGACY_MAX_TRAINING_SENTENCES); its previous model answers, or the fallback without one`,
      );
    const started = Date.now();
    const model = set.intents.length === 0 ? null : await byEngine(() => this.trainTimed(set, timeout));
    const trainingMs = Date.now() - started;
    // Loading, serializing and storing a large model each hold the event loop for a while: let the
    // Messages queued meanwhile through between the steps.
    await yieldToEventLoop();
    if (this.stopped || !(await cols.assistants.findOne({ _id: assistantId }))) {
      this.forget(assistantId);
      return 'gone';
    }
    await this.persist(
      assistantId,
      lang,
      { revision, fingerprint, servedFingerprint, model, trainingMs },
      stored,
    );
    // Deleted while the model was stored: the removal may have looked for models before this one was
    // written (it deletes the assistant first, then its models), so what was written goes here.
    if (!(await cols.assistants.findOne({ _id: assistantId }))) {
      await this.discardModels(assistantId);
      this.forget(assistantId);
      return 'gone';
    }
    this.unloadable.delete(key);
    logger.info({ assistantId, lang, revision, trainingMs, intents: set.intents.length }, 'model trained');
    return model ? 'trained' : 'skipped';
  }

  /**
   * `work`, or STOPPED as soon as `stop()` is called. The promise `stop()` settles is made for this wait and dropped
   * after it: one pending for the process's life would keep every result raced against it (each retraining's model
   * stayed in memory, reachable from its reactions).
   */
  private untilStopped<T>(work: Promise<T>): Promise<T | typeof STOPPED> {
    if (this.stopped) return Promise.resolve(STOPPED);
    let stopWaiting: () => void = () => undefined;
    const stopped = new Promise<typeof STOPPED>((resolve) => {
      stopWaiting = () => resolve(STOPPED);
      this.stopWaiters.add(stopWaiting);
    });
    return Promise.race([work, stopped]).finally(() => this.stopWaiters.delete(stopWaiting));
  }

  /** The engine's training of one set (in a worker unless configured otherwise), timed for the metrics. */
  private async trainTimed(set: NluTrainingSet, timeoutSeconds: number): Promise<NluModel | null> {
    const started = performance.now();
    try {
      const training = this.ctx.config.LEGACY_TRAIN_IN_WORKER
        ? this.engine.trainModelInWorker(set, {
            nice: this.ctx.config.LEGACY_TRAINING_NICE,
            timeoutMs: timeoutSeconds * 1000,
          })
        : Promise.resolve(this.engine.trainModel(set));
      // A stop does not wait for the worker (up to LEGACY_TRAINING_TIMEOUT_SECONDS: the shutdown would outlast
      // its grace period), whose model would not be stored anyway: null, and the caller sees `stopped`.
      const model = await this.untilStopped(training);
      if (model === STOPPED) {
        training.catch(() => undefined);
        return null;
      }
      this.ctx.metrics.training('success', (performance.now() - started) / 1000);
      return model;
    } catch (err) {
      this.ctx.metrics.training('failed', (performance.now() - started) / 1000);
      throw err;
    }
  }

  /**
   * Stores the model's stored form as a blob (the engine's binary form; for a model from the training worker made
   * there, so nothing is serialized here), keeps the model in memory, then points the model record at it, then drops
   * the blob it replaced. The embedded store keeps blobs as files: the stored form is never in this process's heap
   * (decision 0089). The model answers here before its record says it is trained: a client that sees the status up
   * to date and sends a message at once gets the new model's answer, not the previous one's.
   */
  private async persist(
    assistantId: string,
    lang: string,
    trained: {
      revision: number;
      fingerprint: string;
      servedFingerprint: string;
      model: NluModel | null;
      trainingMs: number;
    },
    previous: ModelDoc | null,
  ): Promise<void> {
    const { cols } = this.ctx;
    const key = modelKey(assistantId, lang);
    let stored: { blob: string; bytes: number } | null = null;
    if (trained.model) {
      const model = trained.model;
      const form = await byEngine(() => this.engine.storedModelForm(model));
      stored = { blob: blobOf(key, trained.fingerprint), bytes: form.length };
      await cols.modelBlobs.put(stored.blob, form);
    }
    const answering = this.cache.get(key);
    const learnt: CachedModel = {
      model: trained.model,
      revision: trained.revision,
      fingerprint: trained.fingerprint,
      checkedAt: Date.now(),
    };
    this.remember(key, learnt);
    try {
      await this.writeModelRecord(assistantId, lang, trained, stored);
    } catch (err) {
      if (err instanceof DuplicateKeyError) {
        // Another instance recorded a model of newer data meanwhile (its turn began after this one): it stays, and
        // answers here from the next message. This one's blob is named by no record, unless the other learnt its set.
        if (this.cache.get(key) === learnt) this.cache.delete(key);
        const recorded = await cols.models.findOne({ _id: key });
        if (stored && recorded?.blob !== stored.blob) await cols.modelBlobs.delete(stored.blob);
        return;
      }
      // a write whose reply was lost (the store applied it) is recorded: the status says up to date, so it answers
      if (!(await this.recordedAfterFailure(key, trained.fingerprint))) {
        // not recorded: the previous model answers until a retry records this one, as on the other instances
        if (this.cache.get(key) === learnt) {
          if (answering) this.remember(key, answering);
          else this.cache.delete(key);
        }
        throw err;
      }
      this.ctx.logger.warn({ err, assistantId, lang }, 'a model record was stored though its write failed');
    }
    if (previous?.blob && previous.blob !== stored?.blob) await cols.modelBlobs.delete(previous.blob);
  }

  /**
   * Whether a model record write that failed was applied all the same (MongoDB's connection cut after the server
   * applied it): the record names the model's training set. When the store cannot say, it was not: the turn is tried
   * again, and the retry finds the record current and drops the model here if it is not the recorded one.
   */
  private async recordedAfterFailure(key: string, fingerprint: string): Promise<boolean> {
    try {
      return (await this.ctx.cols.models.findOne({ _id: key }))?.fingerprint === fingerprint;
    } catch {
      return false;
    }
  }

  /**
   * Points the model record at the model just trained (`stored`: its blob, none without sentences), unless it records a
   * newer revision: a DuplicateKeyError then (the upsert's insert meets the record), so an older turn of another
   * instance, ending last, does not put back the model of older data.
   */
  private async writeModelRecord(
    assistantId: string,
    lang: string,
    trained: { revision: number; fingerprint: string; servedFingerprint: string; trainingMs: number },
    stored: { blob: string; bytes: number } | null,
  ): Promise<void> {
    const { cols, clock } = this.ctx;
    await cols.models.updateOne(
      { _id: modelKey(assistantId, lang), revision: { $lte: trained.revision } },
      {
        $set: {
          assistantId,
          lang,
          revision: trained.revision,
          fingerprint: trained.fingerprint,
          servedFingerprint: trained.servedFingerprint,
          trainingRevision: TRAINING_REVISION,
          hasModel: stored !== null,
          ...(stored ?? {}),
          // an earlier version (a rollback) finds no pieces here, and retrains rather than answering without a model
          chunks: 0,
          trainedAt: clock.now(),
          trainingMs: trained.trainingMs,
        },
        // how versions before blobs marked their pieces' form
        $unset: { format: 1 as const, ...(stored ? {} : { blob: 1 as const, bytes: 1 as const }) },
      },
      { upsert: true },
    );
  }

  /**
   * The model records whose assistant exists; those of a removed one (a removal cut short, or one that met a
   * training storing its model) are deleted with their blobs, which their records would otherwise keep for good.
   * `live`: the assistants read at start; one made since (another instance) is looked up before anything goes.
   */
  private async withoutRemovedAssistants(models: ModelDoc[], live: ReadonlySet<string>): Promise<ModelDoc[]> {
    const { cols, logger } = this.ctx;
    const kept: ModelDoc[] = [];
    const removed = new Set<string>();
    for (const model of models) {
      if (live.has(model.assistantId)) kept.push(model);
      else if (removed.has(model.assistantId)) continue;
      else if (await cols.assistants.findOne({ _id: model.assistantId })) kept.push(model);
      else removed.add(model.assistantId);
    }
    try {
      for (const assistantId of removed) await this.discardModels(assistantId);
      if (removed.size > 0)
        logger.info({ assistants: removed.size }, 'models of removed assistants were deleted');
    } catch (err) {
      // the store is away: the next start tries again; these models cost disk space, nothing else
      logger.warn({ err }, 'could not delete the models of removed assistants');
    }
    return kept;
  }

  /**
   * `models` but those of a language their assistant does not speak: one stored in another letter case before tags
   * were kept canonical (decision 0122), whose assistant now speaks it as `pt-BR`. Nothing would read or delete
   * them: they are deleted (record and blob), and the canonical language is trained like any language without a
   * model. `assistants`: those the start read (the others' models are kept).
   */
  private async withoutUnspokenLanguages(
    models: ModelDoc[],
    assistants: AssistantDoc[],
  ): Promise<ModelDoc[]> {
    const { cols, logger } = this.ctx;
    const languagesOf = new Map(assistants.map((a) => [a._id, a.languages]));
    const unspoken = models.filter((m) => languagesOf.get(m.assistantId)?.includes(m.lang) === false);
    if (unspoken.length === 0) return models;
    try {
      for (const model of unspoken) {
        if (model.blob) await cols.modelBlobs.delete(model.blob);
        await cols.models.deleteOne({ _id: model._id });
      }
      logger.info(
        { models: unspoken.length },
        'models of languages their assistant does not speak were deleted',
      );
    } catch (err) {
      // the store is away: the next start tries again; these models cost disk space, nothing else
      logger.warn({ err }, 'could not delete the models of languages their assistant does not speak');
    }
    return models.filter((m) => !unspoken.includes(m));
  }

  /** The model records and blobs of a removed assistant. */
  private async discardModels(assistantId: string): Promise<void> {
    const { cols } = this.ctx;
    const models = await cols.models.find({ assistantId });
    await Promise.all(models.flatMap((m) => (m.blob ? [cols.modelBlobs.delete(m.blob)] : [])));
    await cols.models.deleteMany({ assistantId });
  }

  /**
   * The stored model, loaded (asynchronously, in slices, with @platform/nlu): concurrent callers share one load, and
   * a model trained here meanwhile is not replaced by an older stored one.
   */
  private loadStored(assistantId: string, lang: string): Promise<CachedModel | null> {
    const key = modelKey(assistantId, lang);
    let loading = this.loading.get(key);
    if (!loading) {
      loading = this.readStored(assistantId, lang).finally(() => this.loading.delete(key));
      this.loading.set(key, loading);
    }
    return loading;
  }

  private async readStored(assistantId: string, lang: string, attempt = 1): Promise<CachedModel | null> {
    const { cols, logger } = this.ctx;
    const key = modelKey(assistantId, lang);
    const stored = await cols.models.findOne({ _id: key });
    if (!stored) return null;
    let model: NluModel | null = null;
    if (stored.hasModel) {
      try {
        if (stored.blob !== blobOf(key, stored.fingerprint))
          throw new Error('stored by an earlier version (decision 0089)');
        const bytes = await cols.modelBlobs.get(stored.blob);
        if (!bytes) {
          // Another instance may have just replaced this model: read the record again once.
          if (attempt === 1) return this.readStored(assistantId, lang, 2);
          throw new Error('the stored model is missing');
        }
        if (bytes.length !== stored.bytes) throw new Error('the stored model has the wrong length');
        model = await this.engine.loadStoredModel(bytes);
      } catch (err) {
        logger.warn({ err, assistantId, lang }, 'stored model cannot be loaded; retraining');
        this.unloadable.add(key);
        this.schedule(assistantId, 0);
        return null;
      }
    }
    const cached: CachedModel = {
      model,
      revision: stored.revision,
      fingerprint: stored.fingerprint,
      checkedAt: Date.now(),
    };
    const current = this.cache.get(key);
    if (current && current.revision > cached.revision) return current; // trained here while this loaded
    this.remember(key, cached);
    return cached;
  }

  /** A small LRU: the most recently used models stay in memory. */
  private remember(key: string, cached: CachedModel): void {
    this.cache.delete(key);
    this.cache.set(key, cached);
    while (this.cache.size > this.ctx.config.LEGACY_MODEL_CACHE_SIZE) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }
}
