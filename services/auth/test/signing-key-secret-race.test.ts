import { type Bus, createNatsBus } from '@platform/bus';
import { Subjects } from '@platform/contracts';
import { createLogger, type Logger, ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { describeWithNats, startNatsServer, waitFor } from '@platform/testkit';
import { type AuthHarness, kidOf, publishedKids, startAuth } from './helpers';

/** The embedded engine answering as MongoDB: the store separate auth processes share, each given its own secret. */
const asMongoDb = (store: Store): Store => ({ ...store, engine: 'mongodb' });

/** What an operator would see of an instance beyond its start's outcome: its warnings and errors. */
const problemsIn = (lines: string[]) =>
  lines
    .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string } })
    .filter((line) => line.level >= 40 && !line.msg.startsWith('SMTP_URL is not set'))
    .map((line) => `${line.msg}${line.err ? `: ${line.err.message}` : ''}`);

describeWithNats('two auth instances given different secrets, starting at once on an empty store', () => {
  it('exactly one first key is sealed; the other instance stops with one error naming its secret, and logs nothing else', async () => {
    const nats = await startNatsServer();
    const store = asMongoDb(createEmbeddedStore());
    const clock = new ManualClock('2025-03-01T00:00:00Z');
    const secrets = ['the-secret-instance-a-was-given-0123', 'the-secret-instance-b-was-given-4567'];
    const lines: string[][] = [[], []];
    const loggers: Logger[] = [];
    const buses: Bus[] = [];
    const heard = [0, 0];
    for (const i of [0, 1]) {
      const logger = createLogger({ name: 'auth', destination: { write: (line) => lines[i]!.push(line) } });
      loggers.push(logger);
      // as the runtime's bus does: a failing handler is a log line
      const bus = await createNatsBus({
        url: nats.url,
        name: `auth-${i}`,
        onError: (err, context) => logger.warn({ err, context }, 'bus error'),
      });
      // the first key's announcement reaching this instance's connection, before any handler auth subscribes
      bus.subscribe(Subjects.gatewayJwksUpdated, () => {
        heard[i]!++;
      });
      buses.push(bus);
    }
    const starts = await Promise.allSettled(
      secrets.map((secret, i) =>
        startAuth({
          store,
          clock,
          bus: buses[i],
          logger: loggers[i],
          env: { SIGNING_KEYS_ENCRYPTION_KEY: secret, LOG_LEVEL: 'info' },
        }),
      ),
    );
    const started: AuthHarness[] = [];
    try {
      for (const s of starts) if (s.status === 'fulfilled') started.push(s.value);
      expect(started).toHaveLength(1);
      const winner = starts.findIndex((s) => s.status === 'fulfilled');
      const loser = 1 - winner;
      expect((starts[loser] as PromiseRejectedResult).reason.message).toBe(
        'the stored signing keys cannot be opened with the secret of SIGNING_KEYS_ENCRYPTION_KEY: restore the secret they were sealed with',
      );
      const keys = await store.collection('signing_keys').find({});
      expect(keys).toHaveLength(1);

      // The announcement of the first key reached the instance that stopped: a NATS round trip later it has still
      // said nothing but its start's error (before: "signing-key check failed" and "bus error", each with the
      // cipher's "Unsupported state or unable to authenticate data").
      await waitFor(() => heard[loser]! > 0, {
        what: 'the first key announced to the instance that stopped',
      });
      await buses[loser]!.ping();
      expect(problemsIn(lines[loser]!)).toEqual([]);
      expect(problemsIn(lines[winner]!)).toEqual([]);

      // The one that started signs with that key; given its secret, the other starts and signs with the same key.
      const login = await started[0]!.http.post('/v2/login/anonymous');
      expect(login.status).toBe(200);
      expect(kidOf(login.body.token)).toBe(keys[0]!._id);
      started.push(
        await startAuth({
          store,
          clock,
          bus: buses[loser],
          logger: loggers[loser],
          env: { SIGNING_KEYS_ENCRYPTION_KEY: secrets[winner]!, LOG_LEVEL: 'info' },
        }),
      );
      const again = await started[1]!.http.post('/v2/login/anonymous');
      expect(again.status).toBe(200);
      expect(kidOf(again.body.token)).toBe(keys[0]!._id);
      expect(await publishedKids(started[1]!)).toEqual([keys[0]!._id]);
      expect(await store.collection('signing_keys').count({})).toBe(1);
    } finally {
      for (const h of started) await h.stop();
      for (const bus of buses) await bus.close();
      await store.close();
      await nats.dispose();
    }
  });
});
