import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { tempDir, waitFor } from '@platform/testkit';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { legacyApiDocument } from '../src/openapi';
import { accountWithBot, type Bot, client, dev, say, trained, utterance } from './support/fixtures';
import { interceptedStore } from './support/intercepted-store';
import { type LegacyTestApp, startLegacyApp } from './support/legacy-app';
import { ScriptedNlu } from './support/scripted-nlu';

const env = { LEGACY_MESSAGES_PER_USER: '0', LEGACY_MESSAGES_PER_ADDRESS: '0' };

/**
 * `store` whose next write of a conversation, once `hold()` is called, waits (`waiting`) until `release()`: a turn that
 * has read its conversation and not written it yet.
 */
function storeHoldingAConversationWrite(store: Store) {
  let armed = false;
  let gate = Promise.resolve();
  const held = {
    waiting: false,
    release: (): void => undefined,
    hold() {
      armed = true;
      gate = new Promise<void>((resolve) => {
        held.release = resolve;
      });
    },
    store: interceptedStore(store, async (collection, method, call) => {
      if (armed && collection === 'legacy_conversations' && method === 'updateOne') {
        armed = false;
        held.waiting = true;
        await gate;
      }
      return call();
    }),
  };
  return held;
}

const reply = (text: string) => ({ en: { default: { default: [say(text)] } } });

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

  const message = (app: LegacyTestApp, bot: Bot, body: Record<string, unknown>) =>
    app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'visitor', platform: 'web', ...body })
      .expect(200);

  /** Instance a, whose conversation writes the test can hold, and instance b, over one store. */
  const twoInstances = async () => {
    const held = storeHoldingAConversationWrite(store);
    const a = await startLegacyApp({ nlu: new ScriptedNlu(), store: held.store, clock, env });
    apps.push(a);
    const b = await startLegacyApp({ nlu: new ScriptedNlu(), store, clock, env });
    apps.push(b);
    return { a, b, held };
  };

  it('keeps the contexts of two of its messages answered at once on two instances', async () => {
    const { a, b, held } = await twoInstances();
    const { bot } = await accountWithBot(a.http);
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
    ];
    for (const intent of intents) await a.http.post('/v1/intents').set(dev(bot)).send(intent).expect(200);
    await trained(a.http, bot);
    await message(a, bot, { text: 'hello' }); // the conversation exists before the two messages

    // the visitor's two messages cross: a has read the conversation and not written it yet when b answers
    held.hold();
    // sent now (supertest sends when awaited)
    const size = message(a, bot, { text: 'large please' }).then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    expect((await message(b, bot, { text: 'in red' })).body.intents[0].name).toBe('Colour');
    held.release();
    expect((await size).body.intents[0].name).toBe('Size');

    expect((await message(b, bot, { text: 'order it' })).body.intents[0].name).toBe('Order');
  });

  it('starts one conversation when its first two messages are answered at once on two instances', async () => {
    const { a, b, held } = await twoInstances();
    const { bot } = await accountWithBot(a.http);
    held.hold();
    const first = message(a, bot, { event: 'WELCOME' }).then((res) => res);
    await waitFor(() => held.waiting, { timeoutMs: 10_000, what: "a's write of the conversation" });
    const other = (await message(b, bot, { event: 'WELCOME' })).body;
    held.release();
    const welcome = (await first).body;
    // the session both replies name is the one the next message continues
    expect(welcome.sessionId).toBe(other.sessionId);
    expect(welcome.conversationId).toBe(other.conversationId);
    expect((await message(a, bot, { event: 'WELCOME' })).body.sessionId).toBe(other.sessionId);
  });

  it('answers 409 when other messages keep changing the conversation each time it is answered again', async () => {
    let busy = false;
    let writes = 0;
    // every write of the conversation comes after another instance's
    const app = await startLegacyApp({
      nlu: new ScriptedNlu(),
      clock,
      env,
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
    const refused = await app.http
      .post('/v1/Messages')
      .set(client(bot))
      .send({ userId: 'visitor', platform: 'web', event: 'WELCOME' })
      .expect(409);
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
});
