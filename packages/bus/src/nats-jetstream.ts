import {
  ErrorCode,
  type JetStreamManager,
  type NatsConnection,
  type NatsError,
  nanos,
  StorageType,
} from 'nats';
import type { StreamOptions } from './port';

/**
 * NATS answers, but not with JetStream (nats-server started without -js, or an account without it): durable work
 * waits for it, as it waits for NATS. What the server said, when it said something: else nothing answered.
 */
export class JetStreamUnavailable extends Error {
  constructor(server: string, said?: string) {
    super(
      said
        ? `JetStream is not available on ${server}: ${said}`
        : `JetStream is not enabled on ${server}: start nats-server with -js`,
    );
  }
}

/** JetStream on a bus's connections: whether it is there (said once per time it is missing), and its streams */
export interface JetStream {
  /** why JetStream cannot be used, since a call found it missing and until one finds it back */
  missing(): JetStreamUnavailable | undefined;
  /** JetStream's API on the connection; without JetStream nats.js throws a bare "503", thrown here as what to fix */
  managerOn(conn: NatsConnection): Promise<JetStreamManager>;
  /** makes the stream unless the server has it */
  ensureStreamOn(conn: NatsConnection, stream: StreamOptions): Promise<void>;
  /** publishes to JetStream, `id` deduplicated; nobody answering on a server without JetStream is thrown as what to fix */
  publishOn(conn: NatsConnection, subject: string, data: Uint8Array, id?: string): Promise<void>;
}

export function jetstreamOf(server: string, report: (err: unknown, context: string) => void): JetStream {
  let jetstreamMissing: JetStreamUnavailable | undefined;

  /**
   * What to fix, reported once per time JetStream is missing: callers that keep trying (consumers, an outbox) would
   * otherwise say it at every attempt.
   */
  const jetstreamIsMissing = (said?: string): JetStreamUnavailable => {
    const missing = new JetStreamUnavailable(server, said);
    if (!jetstreamMissing) report(missing, `NATS at ${server}`);
    jetstreamMissing = missing;
    return missing;
  };

  const managerOn = async (conn: NatsConnection): Promise<JetStreamManager> => {
    try {
      const jsm = await conn.jetstreamManager();
      jetstreamMissing = undefined;
      return jsm;
    } catch (err) {
      if ((err as NatsError).code !== ErrorCode.JetStreamNotEnabled) throw err;
      throw jetstreamIsMissing((err as NatsError).api_error?.description);
    }
  };

  return {
    missing: () => jetstreamMissing,
    managerOn,
    async ensureStreamOn(conn, stream) {
      const jsm = await managerOn(conn);
      try {
        await jsm.streams.info(stream.name);
      } catch {
        await jsm.streams.add({
          name: stream.name,
          subjects: stream.subjects,
          storage: StorageType.File,
          max_age: nanos(stream.maxAgeMs ?? 0),
          duplicate_window: nanos(stream.duplicateWindowMs ?? 2 * 60_000),
        });
      }
    },
    async publishOn(conn, subject, data, id) {
      try {
        await conn.jetstream().publish(subject, data, id ? { msgID: id } : undefined);
        jetstreamMissing = undefined;
      } catch (err) {
        if ((err as NatsError).code !== ErrorCode.NoResponders) throw err;
        // Nobody answered: the server has no JetStream, which its INFO tells (asking JetStream's API needs a permission
        // the gateway's user is not given, deploy/nats/authorization.conf), or no stream takes the subject yet.
        if (!conn.info?.jetstream) throw jetstreamIsMissing();
        jetstreamMissing = undefined;
        throw err;
      }
    },
  };
}
