import { ManualClock, NotFound } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { ConversationStore } from './conversation-store';

const who = { orgSlug: 'acme', owner: 'user:u1' };
const item = (id: string) => ({
  id,
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text: id }],
});
const items = (...ids: string[]) => ids.map(item);
const limits = { retentionDays: 30, maxItems: 100, maxBytes: 1e6 };

describe('the conversations', () => {
  it('lists items in pages across batches, from any item, in both orders', async () => {
    const store = createEmbeddedStore();
    const conversations = new ConversationStore(store, new ManualClock('2026-01-01T00:00:00Z'), limits);
    const { id } = (await conversations.create(who, {}, items('a', 'b', 'c'))) as { id: string };
    await conversations.appendTurn(who, id, items('d', 'e'));
    await conversations.add(who, id, items('f'));
    await conversations.appendTurn(who, id, items('g', 'h', 'i'));
    const all = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'];
    const walk = async (order: 'asc' | 'desc', limit: number) => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await conversations.list(who, id, { order, limit, after });
        seen.push(...page.data.map((i) => String(i.id)));
        if (!page.has_more) return seen;
        after = seen.at(-1);
      }
    };
    for (const limit of [1, 2, 4, 9, 20]) {
      expect(await walk('asc', limit)).toEqual(all);
      expect(await walk('desc', limit)).toEqual([...all].reverse());
    }
    expect((await conversations.history(who, id, { count: 0, bytes: 0 })).map((i) => i.id)).toEqual(all);
    await store.close();
  });

  it('an item deleted leaves its batch-mates; two deletions at once in one batch both hold', async () => {
    const store = createEmbeddedStore();
    const conversations = new ConversationStore(store, new ManualClock('2026-01-01T00:00:00Z'), limits);
    const { id } = (await conversations.create(who, {}, items('a', 'b', 'c', 'd'))) as { id: string };
    await Promise.all([conversations.deleteItem(who, id, 'b'), conversations.deleteItem(who, id, 'c')]);
    expect((await conversations.history(who, id, { count: 0, bytes: 0 })).map((i) => i.id)).toEqual([
      'a',
      'd',
    ]);
    const raw = await store
      .collection<{ _id: string; items: number }>('llm_conversations')
      .findOne({ _id: id });
    expect(raw?.items).toBe(2);
    await store.close();
  });

  it('a conversation changed keeps every item as long as it lives, its first ones too', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const store = createEmbeddedStore({ ttlSweepIntervalMs: 10, now: () => clock.now().getTime() });
    const conversations = new ConversationStore(store, clock, limits);
    const { id } = (await conversations.create(who, {}, items('a'))) as { id: string };
    // a record due on day 30, the end of the retention of the items added on day 0 if nothing extended them
    const batches = store.collection<{ _id: string; expiresAt: Date }>('llm_conversation_items');
    await batches.insertOne({ _id: 'sentinel', expiresAt: new Date('2026-01-31T00:00:00Z') });
    clock.advance(14 * 86_400_000);
    await conversations.appendTurn(who, id, items('b'));
    // day 31: the conversation lives until day 44, 30 days after its last change
    clock.advance(17 * 86_400_000);
    await waitFor(async () => (await batches.findOne({ _id: 'sentinel' })) === null, {
      what: 'the sweep past day 30',
    });
    expect((await conversations.history(who, id, { count: 0, bytes: 0 })).map((i) => i.id)).toEqual([
      'a',
      'b',
    ]);
    await store.close();
  });

  it('a conversation deleted while a turn or items are written keeps none of them', async () => {
    const store = createEmbeddedStore();
    const conversations = new ConversationStore(store, new ManualClock('2026-01-01T00:00:00Z'), limits);
    const batches = store.collection<{ _id: string; conversationId: string }>('llm_conversation_items');
    const insert = batches.insertOne.bind(batches);
    // the deletion (or the owner's, or the organization's) lands between the reservation and the insert
    let deleting: ((id: string) => Promise<unknown>) | null = null;
    batches.insertOne = async (doc) => {
      await deleting?.(doc.conversationId);
      return insert(doc);
    };
    const cases: Array<[string, (id: string) => Promise<unknown>]> = [
      ['delete', (id) => conversations.delete(who, id)],
      ['forgetOwner', () => conversations.forgetOwner(who.owner)],
      ['forgetOrganization', () => conversations.forgetOrganization(who.orgSlug)],
    ];
    for (const [how, remove] of cases) {
      deleting = null;
      const { id } = (await conversations.create(who, {}, items('a'))) as { id: string };
      const { id: other } = (await conversations.create(who, {}, items('b'))) as { id: string };
      deleting = remove;
      expect({ how, added: await conversations.appendTurn(who, id, items('c', 'd')) }).toEqual({
        how,
        added: false,
      });
      await expect(conversations.add(who, other, items('e'))).rejects.toBeInstanceOf(NotFound);
      expect({ how, left: await batches.find({}) }).toEqual({ how, left: [] });
    }
    await store.close();
  });

  it('the TTL sweep removes a conversation and its items at the end of their retention, unread', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const store = createEmbeddedStore({ ttlSweepIntervalMs: 10, now: () => clock.now().getTime() });
    const conversations = new ConversationStore(store, clock, limits);
    const { id } = (await conversations.create(who, { a: 'b' }, items('a'))) as { id: string };
    clock.advance(20 * 86_400_000);
    await conversations.appendTurn(who, id, items('b'));
    clock.advance(20 * 86_400_000);
    // 40 days after its creation, 20 after its last change: all there, its first items extended with it
    expect((await conversations.history(who, id, { count: 0, bytes: 0 })).map((i) => i.id)).toEqual([
      'a',
      'b',
    ]);
    clock.advance(11 * 86_400_000);
    await expect(conversations.get(who, id)).rejects.toBeInstanceOf(NotFound);
    await waitFor(async () => (await store.collection('llm_conversations').find({})).length === 0, {
      what: 'the expired conversation swept',
    });
    // its items, which nobody can read without it, half a retention later
    clock.advance(15 * 86_400_000);
    await waitFor(async () => (await store.collection('llm_conversation_items').find({})).length === 0, {
      what: 'its items swept',
    });
    await store.close();
  });
});
