import pino from 'pino';
import { currentRequestId } from './request-context';

export type Logger = pino.Logger;

export interface LoggerOptions {
  name: string;
  level?: string;
  /** where lines go; defaults to stdout */
  destination?: pino.DestinationStream;
}

/** pino JSON logger whose every line carries the current request id (from AsyncLocalStorage). */
export function createLogger({ name, level = 'info', destination }: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const requestId = currentRequestId();
      return requestId ? { requestId } : {};
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger that writes nothing, for tests that do not look at logs. */
export const silentLogger = (): Logger => pino({ level: 'silent' });
