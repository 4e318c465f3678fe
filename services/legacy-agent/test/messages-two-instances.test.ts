import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import supertest from 'supertest';
import { legacyApiDocument } from '../src/openapi';
import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { interceptedStore } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

/**
 * `store` whose next write of a conversation, once `hold()` is called, waits (`waiting`) until `release()`: a turn that
 * has read its conversation and not written it yet. `writes` counts the conversation writes tried.
 */
function storeHoldingAConversationWrite(store: Store) {
  let armed = false;
  let gate = Promise.resolve();
  const held = {
    waiting: false,
    writes: 0,
    release: (): void => undefined,
    hold() {
      armed = true;
      gate = new Promise<void>((resolve) => {
        held.release = resolve;
      });
    },
    store: interceptedStore(store, async (collection, method, call) => {
      if (collection === 'legacy_conversations' && method === 'updateOne') {
        held.writes++;
        if (armed) {
          armed = false;
          held.waiting = true;
          await gate;
        }
      }
      return call();
    }),
  };
  return held;
}

/** no rate limits: a test sets the one it is about */
const unlimited = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' };

const reply = (text: string) => ({ en: { default: { default: [say(text)] } } });

const intents = [
  {
    name: 'Size',
    utterances: { en: [utterance('large please')] },
    outputContexts: { en: [{ name: 'size', lifespan: 5 }] },
    conditionalResponses: reply('Large it is.'),
  },
  {
    name: 'Colour',
    utterances: { en: [utterance('in red')] },
    outputContexts: { en: [{ name: 'colour', lifespan: 5 }] },
    conditionalResponses: reply('Red it is.'),
  },
  {
    name: 'Order',
    utterances: { en: [utterance('order it')] },
    inputContexts: ['size', 'colour'],
    conditionalResponses: reply('Ordered.'),
  },
  {
    name: 'Bye',
    utterances: { en: [utterance('goodbye now')] },
    endConversation: true,
    conditionalResponses: reply('Bye.'),
  },
];

describe('legacy Messages: one conversation on two instances at once', () => {
  let folder: ReturnType<typeof tempDir>;
  let store: Store;
  let clock: ManualClock;
  const apps: LegacyTestApp[] = [];
  beforeEach(() => {
    folder = tempDir('legacy-two-instances-messages-');
    clock = new ManualClock('2026-11-23T10:00:00Z');
    // the apps' clock: on the real one, the store's TTL sweep (each minute) removed conversations the test's clock
    // keeps live, and a context the next message needed was gone
    store = createEmbeddedStore({ dataDir: folder.dir, now: () => clock.now().getTime() });
  });
  afterEach(async () => {
    for (const app of apps.splice(0).reverse()) await app.close();
    await store.close();
    folder.remove();
  });

  const send = (app: LegacyTestApp, bot: Bot, body: Record<string, unknown>) =>
    app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'visitor', platform: 'web', ...body });
  const message = async (app: LegacyTestApp, bot: Bot, body: Record<string, unknown>) =>
    (await send(app, bot, body).expect(200)).body;

  /** Instance a, whose conversation writes the test can hold, and instance b, over one store; a new assistant. */
  const twoInstances = async (env: Record<string, string> = {}) => {
    const limits = { ...unlimited, ...env };
    const held = storeHoldingAConversationWrite(store);
    const a = await startLegacyApp({ nlu: new ScriptedNlu(), store: held.store, clock, env: limits });
    apps.push(a);
    const b = await startLegacyApp({ nlu: new ScriptedNlu(), store, clock, env: limits });
    apps.push(b);
    const { bot } = await accountWithBot(a.http);
    return { a, b, held, bot };
  };
  /** `twoInstances`, the assistant trained on `intents` */
  const twoInstancesTrained = async (env: Record<string, string> = {}) => {
    const instances = await twoInstances(env);
    const { a, bot } = instances;
    for (const intent of intents) await a.http.post('/v1/intents').set(dev(bot)).send(intent).expect(200);
    await trained(a.http, bot);
    return instances;
  };

  /** a answers `first` up to its write, b answers `second` meanwhile, then a goes on: both bodies. */
  const crossing = async (
    { a, b, held, bot }: Awaited<ReturnType<typeof twoInstances>>,
    first: Record<string, unknown>,
    second: Record<string, unknown>,
  ) => {
    held.hold();
    // sent now (supertest sends when awaited)
    const answering = send(a, bot, first)
      .expect(200)
      .then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    const other = await message(b, bot, second);
    held.release();
    const answered = (await answering).body;
    return { answered, other };
  };

  it('keeps the contexts of two of its messages answered at once on two instances', async () => {
    const instances = await twoInstancesTrained();
    const { a, b, bot } = instances;
    await message(a, bot, { text: 'hello' }); // the conversation exists before the two messages

    // the visitor's two messages cross: a has read the conversation and not written it yet when b answers
    const { answered, other } = await crossing(instances, { text: 'large please' }, { text: 'in red' });
    expect(other.intents[0].name).toBe('Colour');
    expect(answered.intents[0].name).toBe('Size');

    expect((await message(b, bot, { text: 'order it' })).intents[0].name).toBe('Order');
  });

  it('starts one conversation when its first two messages are answered at once on two instances', async () => {
    const instances = await twoInstances();
    const { a, bot } = instances;
    const { answered: welcome, other } = await crossing(
      instances,
      { event: 'WELCOME' },
      { event: 'WELCOME' },
    );
    // the session both replies name is the one the next message continues
    expect(welcome.sessionId).toBe(other.sessionId);
    expect(welcome.conversationId).toBe(other.conversationId);
    expect((await message(a, bot, { event: 'WELCOME' })).sessionId).toBe(other.sessionId);
  });

  it('answers 409 when other messages keep changing the conversation each time it is answered again', async () => {
    let busy = false;
    let writes = 0;
    // every write of the conversation comes after another instance's
    const app = await startLegacyApp({
      nlu: new ScriptedNlu(),
      clock,
      env: unlimited,
      store: interceptedStore(store, async (collection, method, call, args) => {
        if (busy && collection === 'legacy_conversations' && method === 'updateOne') {
          writes++;
          const [filter] = args as [{ _id: string }];
          await store
            .collection('legacy_conversations')
            .updateOne({ _id: filter._id }, { $set: { revision: `other turn ${writes}` } });
        }
        return call();
      }),
    });
    apps.push(app);
    const { bot } = await accountWithBot(app.http);
    await message(app, bot, { event: 'WELCOME' });
    // long enough for the turn to be written, though it changes nothing else
    clock.advance(61_000);
    busy = true;
    const refused = await send(app, bot, { event: 'WELCOME' }).expect(409);
    expect(refused.body.status).toMatchObject({ code: 409, errorType: 'conflict' });
    // as the OpenAPI document says
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    ajv.addSchema(legacyApiDocument('http://localhost/legacy'), 'legacy');
    const documented = ajv.getSchema(
      'legacy#/paths/~1v1~1Messages/post/responses/409/content/application~1json/schema',
    );
    expect(documented?.(refused.body)).toBe(true);
    expect(writes).toBe(10);
    busy = false;
    await message(app, bot, { event: 'WELCOME' });
  });

  it('answers again over a conversation stored before revisions, keeping the other turn', async () => {
    const instances = await twoInstancesTrained();
    const { a, b, bot } = instances;
    await message(b, bot, { text: 'hello' });
    // as an earlier version stored it
    await store
      .collection('legacy_conversations')
      .updateOne({ _id: `${bot.id}:visitor` }, { $unset: { revision: 1 } });

    const { answered } = await crossing(instances, { text: 'large please' }, { text: 'in red' });
    expect(answered.intents[0].name).toBe('Size');
    expect((await message(a, bot, { text: 'order it' })).intents[0].name).toBe('Order');
  });

  it('counts a message answered twice once, in the rate limit and the metrics', async () => {
    const instances = await twoInstancesTrained({ LEGACY_MESSAGES_PER_USER: '3' });
    const { a, held, bot } = instances;
    await message(a, bot, { text: 'hello' });
    const writes = held.writes;
    const { answered } = await crossing(instances, { text: 'large please' }, { text: 'in red' });
    expect(answered.intents[0].name).toBe('Size');
    // a tried its write twice: the message was answered twice
    expect(held.writes - writes).toBe(2);

    // a's budget of the user (the embedded store's counters are the process's): hello, large please, and one more
    expect((await message(a, bot, { text: 'order it' })).intents[0].name).toBe('Order');
    expect((await send(a, bot, { text: 'order it' })).status).toBe(429);
    const metrics = (await supertest(a.service.admin).get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/legacy_agent_messages_total\{result="answered"[^}]*\} 2\b/);
    expect(metrics).toMatch(/legacy_agent_messages_total\{result="fallback"[^}]*\} 1\b/);
  });

  it('names in its reply the session and conversation it was written in, after its conversation expired', async () => {
    const { a, b, held, bot } = await twoInstancesTrained();
    await message(a, bot, { text: 'hello' });
    held.hold();
    const answering = send(a, bot, { text: 'large please' }).then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    // removed as its TTL index removes an expired one
    await store.collection('legacy_conversations').deleteOne({ _id: `${bot.id}:visitor` });
    held.release();
    const answered = (await answering).body;
    expect(answered.intents[0].name).toBe('Size');

    const next = await message(b, bot, { text: 'in red' });
    expect({ sessionId: next.sessionId, conversationId: next.conversationId }).toEqual({
      sessionId: answered.sessionId,
      conversationId: answered.conversationId,
    });
    expect((await message(b, bot, { text: 'order it' })).intents[0].name).toBe('Order');
  });

  it('ends the conversation the other turn left when its intent ends it', async () => {
    const instances = await twoInstancesTrained();
    const { a, bot } = instances;
    await message(a, bot, { text: 'hello' });
    const { answered, other } = await crossing(instances, { text: 'goodbye now' }, { text: 'large please' });
    expect(answered.intents[0]).toMatchObject({ name: 'Bye', endConversation: true });
    // answered after the other: in its conversation, which it ends, the size forgotten
    expect(answered.conversationId).toBe(other.conversationId);
    const next = await message(a, bot, { text: 'in red' });
    expect(next.conversationId).not.toBe(other.conversationId);
    expect(next.sessionId).toBe(other.sessionId);
    expect((await message(a, bot, { text: 'order it' })).intents[0].name).not.toBe('Order');
  });
});
