import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import supertest from 'supertest';
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

describe('legacy Messages: a turn answered again after another instance wrote its conversation', () => {
  let folder: ReturnType<typeof tempDir>;
  let store: Store;
  let clock: ManualClock;
  const apps: LegacyTestApp[] = [];
  beforeEach(() => {
    folder = tempDir('legacy-two-instances-review-');
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

  const send = (app: LegacyTestApp, bot: Bot, text: string) =>
    app.http.post('/v1/Messages').set(client(bot)).send({ userId: 'visitor', platform: 'web', text });
  const message = async (app: LegacyTestApp, bot: Bot, text: string) =>
    (await send(app, bot, text).expect(200)).body;

  /** Instance a, whose conversation writes the test can hold, and instance b, over one store; an assistant trained. */
  const twoInstances = async (env: Record<string, string> = {}) => {
    const limits = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0', ...env };
    const held = storeHoldingAConversationWrite(store);
    const a = await startLegacyApp({ nlu: new ScriptedNlu(), store: held.store, clock, env: limits });
    apps.push(a);
    const b = await startLegacyApp({ nlu: new ScriptedNlu(), store, clock, env: limits });
    apps.push(b);
    const { bot } = await accountWithBot(a.http);
    for (const intent of intents) await a.http.post('/v1/intents').set(dev(bot)).send(intent).expect(200);
    await trained(a.http, bot);
    return { a, b, held, bot };
  };

  /** a answers `first` up to its write, b answers `second` meanwhile, then a goes on: both bodies. */
  const crossing = async (
    { a, b, held, bot }: Awaited<ReturnType<typeof twoInstances>>,
    first: string,
    second: string,
  ) => {
    held.hold();
    const answering = send(a, bot, first).then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    const other = await message(b, bot, second);
    held.release();
    const answered = (await answering).body;
    return { answered, other };
  };

  it('answers again over a conversation stored before revisions, keeping the other turn', async () => {
    const instances = await twoInstances();
    const { a, b, bot } = instances;
    await message(b, bot, 'hello');
    // as an earlier version stored it
    await store
      .collection('legacy_conversations')
      .updateOne({ _id: `${bot.id}:visitor` }, { $unset: { revision: 1 } });

    const { answered } = await crossing(instances, 'large please', 'in red');
    expect(answered.intents[0].name).toBe('Size');
    expect((await message(a, bot, 'order it')).intents[0].name).toBe('Order');
  });

  it('counts a message answered twice once, in the rate limit and the metrics', async () => {
    const instances = await twoInstances({ LEGACY_MESSAGES_PER_USER: '3' });
    const { a, held, bot } = instances;
    await message(a, bot, 'hello');
    const writes = held.writes;
    const { answered } = await crossing(instances, 'large please', 'in red');
    expect(answered.intents[0].name).toBe('Size');
    // a tried its write twice: the message was answered twice
    expect(held.writes - writes).toBe(2);

    // a's budget of the user (the embedded store's counters are the process's): hello, large please, and one more
    expect((await message(a, bot, 'order it')).intents[0].name).toBe('Order');
    expect((await send(a, bot, 'order it')).status).toBe(429);
    const metrics = (await supertest(a.service.admin).get('/metrics').expect(200)).text;
    expect(metrics).toMatch(/legacy_agent_messages_total\{result="answered"[^}]*\} 2\b/);
    expect(metrics).toMatch(/legacy_agent_messages_total\{result="fallback"[^}]*\} 1\b/);
  });

  it('names in its reply the session and conversation it was written in, after its conversation expired', async () => {
    const instances = await twoInstances();
    const { a, b, held, bot } = instances;
    await message(a, bot, 'hello');
    held.hold();
    const answering = send(a, bot, 'large please').then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    // removed as its TTL index removes an expired one
    await store.collection('legacy_conversations').deleteOne({ _id: `${bot.id}:visitor` });
    held.release();
    const answered = (await answering).body;
    expect(answered.intents[0].name).toBe('Size');

    const next = await message(b, bot, 'in red');
    expect({ sessionId: next.sessionId, conversationId: next.conversationId }).toEqual({
      sessionId: answered.sessionId,
      conversationId: answered.conversationId,
    });
    expect((await message(b, bot, 'order it')).intents[0].name).toBe('Order');
  });

  it('ends the conversation the other turn left when its intent ends it', async () => {
    const instances = await twoInstances();
    const { a, bot } = instances;
    await message(a, bot, 'hello');
    const { answered, other } = await crossing(instances, 'goodbye now', 'large please');
    expect(answered.intents[0]).toMatchObject({ name: 'Bye', endConversation: true });
    // answered after the other: in its conversation, which it ends, the size forgotten
    expect(answered.conversationId).toBe(other.conversationId);
    const next = await message(a, bot, 'in red');
    expect(next.conversationId).not.toBe(other.conversationId);
    expect(next.sessionId).toBe(other.sessionId);
    expect((await message(a, bot, 'order it')).intents[0].name).not.toBe('Order');
  });
});
