import {
  type CounterSeries,
  counterFamily,
  createHttpMetrics,
  type HistogramSeries,
  type HttpMetrics,
  histogramFamily,
  scrapedGauge,
} from '@platform/kernel';

/** answered: an intent answered; fallback: no intent understood it; no_model: no trained model to classify with */
export type MessageResult = 'answered' | 'fallback' | 'no_model';
type TrainingResult = 'success' | 'failed';
/** address, user: a message refused by that budget; store_failed: the counters failed and the message went through */
export type MessageLimitOutcome = 'address' | 'user' | 'store_failed';

export interface LegacyMetrics {
  /** request count and latency by route (the kernel's), and the registry behind /metrics */
  http: HttpMetrics;
  /** one `/v1/Messages` answered */
  message(result: MessageResult): void;
  /** one model trained by the engine (a timeout is a failure) */
  training(result: TrainingResult, seconds: number): void;
  /** one message refused by a rate limit, or let through uncounted (decision 0112) */
  messageLimit(outcome: MessageLimitOutcome): void;
}

/**
 * legacy-agent's Prometheus metrics (docs/decisions/0097): how Messages are answered, and the training queue
 * and its durations. No assistant, intent or user in any label.
 */
export function createLegacyMetrics(read: { trainingQueue: () => number }): LegacyMetrics {
  const http = createHttpMetrics('legacy-agent', false);
  const messageFamily = counterFamily(
    http.registry,
    'legacy_agent_messages_total',
    'Messages answered, by result (answered by an intent; fallback; no_model: no trained model to classify with)',
  );
  const messages = {} as Record<MessageResult, CounterSeries>;
  for (const result of ['answered', 'fallback', 'no_model'] as const)
    messages[result] = messageFamily.series({ result });
  const trainingFamily = histogramFamily(
    http.registry,
    'legacy_agent_training_duration_seconds',
    "One model's training by the NLU engine (one assistant, one language), by result",
    [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
  );
  const trainings = {} as Record<TrainingResult, HistogramSeries>;
  for (const result of ['success', 'failed'] as const) trainings[result] = trainingFamily.series({ result });
  const limitFamily = counterFamily(
    http.registry,
    'legacy_agent_message_limits_total',
    'Messages refused by a rate limit (address, user), or let through uncounted because the counters failed (store_failed)',
  );
  const limits = {} as Record<MessageLimitOutcome, CounterSeries>;
  for (const outcome of ['address', 'user', 'store_failed'] as const)
    limits[outcome] = limitFamily.series({ outcome });
  scrapedGauge(
    http.registry,
    'legacy_agent_training_queue_length',
    'Assistants whose training is queued or running in this process (one training runs at a time)',
    read.trainingQueue,
  );
  return {
    http,
    message: (result) => {
      messages[result].value++;
    },
    training: (result, seconds) => trainings[result].observe(seconds),
    messageLimit: (outcome) => {
      limits[outcome].value++;
    },
  };
}
