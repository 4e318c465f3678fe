import { AppError, statusOfKind } from '@platform/kernel';
import type { AssistantDoc } from '../persistence/collections';
import type { Assistants } from './assistants';
import type { LegacyContext } from './context';
import type { TrainingStatus, Understanding } from './understanding';

/**
 * How long a step of retraining that the store failed waits before it is tried again: the first wait, doubled after
 * each failure, up to the longest. Through a long outage an assistant tries once per RETRY_MAX_MS at most, so nothing
 * runs in a loop, and learns what changed meanwhile within RETRY_MAX_MS of the store's return.
 */
export const RETRY_FIRST_MS = 1_000;
export const RETRY_MAX_MS = 30_000;

/** The wait before the next try after `failures` failures in a row (1 or more). */
export const retryDelayMs = (failures: number): number =>
  Math.min(RETRY_FIRST_MS * 2 ** Math.min(failures - 1, 30), RETRY_MAX_MS);

export type DataChangeListener = (assistantId: string) => Promise<void>;

/**
 * Runs `change` (a write of the assistant's intents or entities, and the steps that complete it), then records it for
 * training, also when it failed otherwise than by a refusal: the write may be stored all the same (a step after it
 * failed, or its reply was lost), and a retry would not write it again (409 `IntentNameTaken`, 404), so nothing would
 * learn it. Recording a change that was not stored costs a training that finds its models current.
 */
export async function recordingChange<T>(
  onChange: DataChangeListener,
  assistantId: string,
  change: () => Promise<T>,
): Promise<T> {
  let result: T;
  try {
    result = await change();
  } catch (err) {
    if (!(err instanceof AppError && statusOfKind[err.kind] < 500)) await onChange(assistantId);
    throw err;
  }
  await onChange(assistantId);
  return result;
}

/** Changes of one assistant that the store did not record. */
interface Unrecorded {
  /** the newest of them (changes are numbered as they arrive): a record begun after it covers them all */
  latest: number;
  failures: number;
  timer?: unknown;
  /** when the next try is due */
  retryAt: Date;
}

/**
 * Records each change of an assistant's intents or entities for training (its revision, which the models must catch
 * up with), then schedules the training. The change is stored by then, so a store that fails to record it does not
 * fail the change: the record is tried again, with back-off on the service's timers, until the store takes it, and
 * meanwhile the assistant's training status says that it is not up to date, and why. Without the record neither the
 * models nor the intents each instance keeps by revision would learn the change until a pass of its training found it
 * (a start's check, say: `Understanding.revisionToLearn`).
 */
export class Retraining {
  private readonly unrecorded = new Map<string, Unrecorded>();
  private changes = 0;
  private stopped = false;

  constructor(
    private readonly ctx: LegacyContext,
    private readonly assistants: Assistants,
    private readonly understanding: Understanding,
  ) {}

  /** After intents or entities change (stored already). */
  async changed(assistantId: string): Promise<void> {
    const change = ++this.changes;
    try {
      await this.record(assistantId, change);
    } catch (err) {
      this.ctx.logger.warn({ err, assistantId }, 'could not record a change for training; trying again');
      const pending = this.unrecorded.get(assistantId);
      // the try armed or under way records this change too, or arms the next one
      if (pending) pending.latest = Math.max(pending.latest, change);
      else {
        const fresh: Unrecorded = { latest: change, failures: 0, retryAt: this.ctx.clock.now() };
        this.unrecorded.set(assistantId, fresh);
        this.retryLater(assistantId, fresh);
      }
    }
  }

  /** Where training stands (Understanding's status), and a change not yet recorded for it. */
  async status(assistant: AssistantDoc): Promise<TrainingStatus> {
    const status = await this.understanding.status(assistant);
    const pending = this.unrecorded.get(assistant._id);
    if (!pending) return status;
    const why = `a change is saved but the store could not record it for training; it is recorded and trained once the store answers (next try at ${pending.retryAt.toISOString()})`;
    return { ...status, upToDate: false, error: status.error ? `${status.error}; ${why}` : why };
  }

  /** A removed assistant has nothing to record. */
  forget(assistantId: string): void {
    this.ctx.timers.clear(this.unrecorded.get(assistantId)?.timer);
    this.unrecorded.delete(assistantId);
  }

  stop(): void {
    this.stopped = true;
    for (const pending of this.unrecorded.values()) this.ctx.timers.clear(pending.timer);
    this.unrecorded.clear();
  }

  /** Bumps the revision (the change is recorded, and so are the unrecorded ones before it), then schedules training. */
  private async record(assistantId: string, change: number): Promise<void> {
    await this.assistants.bumpRevision(assistantId);
    const pending = this.unrecorded.get(assistantId);
    if (pending && change > pending.latest) this.forget(assistantId);
    this.understanding.schedule(assistantId);
  }

  private retryLater(assistantId: string, pending: Unrecorded): void {
    if (this.stopped) return;
    pending.failures++;
    const delayMs = retryDelayMs(pending.failures);
    pending.retryAt = new Date(this.ctx.clock.now().getTime() + delayMs);
    pending.timer = this.ctx.timers.set(() => void this.retry(assistantId, pending), delayMs);
  }

  private async retry(assistantId: string, pending: Unrecorded): Promise<void> {
    pending.timer = undefined;
    if (this.stopped || this.unrecorded.get(assistantId) !== pending) return;
    try {
      await this.record(assistantId, ++this.changes);
    } catch (err) {
      this.ctx.logger.warn({ err, assistantId }, 'could not record a change for training; trying again');
    }
    // still unrecorded: the store failed again, or a change that it failed to record arrived during this record
    if (!this.stopped && this.unrecorded.get(assistantId) === pending) this.retryLater(assistantId, pending);
  }
}
