import type { Bus, Consumer, DurableMessage } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import type { Clock, Logger } from '@platform/kernel';
import type { SettingsRepository } from '../data/settings-repo';
import { readCompletionEvent } from './intake';
import type { UsageBatcher } from './usage-batcher';

export interface UsageConsumerOptions {
  bus: Bus;
  batcher: UsageBatcher;
  settings: SettingsRepository;
  clock: Clock;
  logger: Logger;
  stream: string;
  durable: string;
  streamMaxAgeMs: number;
  maxEventAgeMs: number;
  concurrency: number;
  retryDelayMs: number;
  /** counts what happened to each message, for metrics; `lagSeconds`: from the event's time to now (none for a dead letter) */
  onOutcome?: (outcome: 'counted' | 'duplicate' | 'retry' | 'dead_letter', lagSeconds?: number) => void;
}

/**
 * The most of a refused event's raw text a dead letter keeps when the whole of it cannot be stored: quoted in the dead
 * letter (at most 6 bytes a character), it stays under NATS's default 1 MB payload limit.
 */
const DEAD_LETTER_RAW_MAX = 100_000;

/** Asks the stream to deliver a message again later; never a crash of the consumer. */
export class RetryLater extends Error {
  constructor(readonly eventId: string) {
    super(`event ${eventId} is held by an unfinished batch; it will be delivered again`);
  }
}

/**
 * The durable consumer of `analytics.llm.completion`. A message is acknowledged only once its event
 * is journaled (or recognised as a duplicate, or set aside as a dead letter), so nothing published
 * while llm-quota is down or restarting is lost. A malformed event is published to
 * `analytics.llm.completion.dead` with the reason, then acknowledged: the consumer never stops on it.
 */
export class UsageConsumer {
  private consumer: Consumer | null = null;
  private readonly knownOrgs = new Set<string>();

  constructor(private readonly options: UsageConsumerOptions) {}

  async start(): Promise<void> {
    const { bus, stream } = this.options;
    await bus.ensureStream({
      name: stream,
      subjects: ['analytics.>'],
      maxAgeMs: this.options.streamMaxAgeMs,
    });
    this.consumer = await bus.consumeDurable({
      stream,
      durable: this.options.durable,
      filterSubject: Subjects.llmCompletion,
      concurrency: this.options.concurrency,
      retryDelayMs: this.options.retryDelayMs,
      handler: (message) => this.handle(message),
    });
  }

  async stop(): Promise<void> {
    const consumer = this.consumer;
    this.consumer = null;
    await consumer?.stop();
    await this.options.batcher.idle();
  }

  async handle(message: DurableMessage): Promise<void> {
    const arrival = this.options.clock.now();
    const intake = readCompletionEvent(message.data, arrival, this.options.maxEventAgeMs);
    if (!intake.ok) {
      this.options.logger.warn(
        { reason: intake.reason, details: intake.details, eventId: intake.eventId },
        'usage event refused; sent to the dead letters',
      );
      const deadLetter = {
        reason: intake.details ? `${intake.reason}: ${JSON.stringify(intake.details)}` : intake.reason,
        raw: message.data,
        at: arrival.toISOString(),
      };
      try {
        await this.options.bus.publishDurable(Subjects.llmCompletionDeadLetter, deadLetter);
      } catch (err) {
        // Never let one bad event come back forever. Either the dead letter is too large for the bus (the raw
        // event, quoted again, can pass the server's payload limit that the event itself was under): it goes
        // with the start of the raw event; or no stream takes the subject (a stream made elsewhere without
        // `analytics.>`): it goes to subscribers only. The log line keeps it too.
        const shortened =
          deadLetter.raw.length > DEAD_LETTER_RAW_MAX
            ? {
                ...deadLetter,
                reason: `${deadLetter.reason} (raw truncated to its first ${DEAD_LETTER_RAW_MAX} of ${deadLetter.raw.length} characters)`,
                raw: deadLetter.raw.slice(0, DEAD_LETTER_RAW_MAX),
              }
            : null;
        const stored =
          shortened !== null &&
          (await this.options.bus.publishDurable(Subjects.llmCompletionDeadLetter, shortened).then(
            () => true,
            () => false,
          ));
        this.options.logger.error(
          { err, deadLetter: { ...deadLetter, raw: deadLetter.raw.slice(0, 10_000) } },
          stored
            ? 'dead letter stored with its raw event truncated'
            : 'dead letter not stored in the stream; published to subscribers only',
        );
        if (!stored) {
          await this.options.bus.publish(Subjects.llmCompletionDeadLetter, shortened ?? deadLetter);
        }
      }
      this.options.onOutcome?.('dead_letter');
      return;
    }
    const { event } = intake;
    if (intake.clockAhead) {
      this.options.logger.warn(
        { eventId: event.id, occurredAt: event.occurredAt.toISOString(), arrival: arrival.toISOString() },
        'usage event from the future: counted at its arrival time',
      );
    }
    if (!this.knownOrgs.has(event.orgSlug)) {
      await this.options.settings.ensure(event.orgSlug);
      if (this.knownOrgs.size >= 100_000) this.knownOrgs.clear();
      this.knownOrgs.add(event.orgSlug);
    }
    const outcome = await this.options.batcher.add(event);
    this.options.onOutcome?.(
      outcome,
      (this.options.clock.now().getTime() - event.countedAt.getTime()) / 1000,
    );
    if (outcome === 'retry') throw new RetryLater(event.id);
  }
}
