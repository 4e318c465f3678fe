import type { Clock, Logger } from '@platform/kernel';
import type { LegacyAgentConfig } from '../config';
import type { LegacyMetrics } from '../metrics';
import type { LegacyCollections } from '../persistence/collections';
import type { RetrainTimers } from './timers';
import type { TokenSealer } from './tokens';

/** What every use case of the service needs; built once in service.ts. */
export interface LegacyContext {
  config: LegacyAgentConfig;
  logger: Logger;
  clock: Clock;
  cols: LegacyCollections;
  sealer: TokenSealer;
  /** uniform in [0, 1); injected so tests can pin text alternatives */
  random: () => number;
  /** retraining's debounce timers; injected so tests move time */
  timers: RetrainTimers;
  metrics: LegacyMetrics;
}
