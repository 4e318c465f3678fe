import { ManualClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { waitFor } from '@platform/testkit';
import { ResponseStore } from './response-store';

const who = { orgSlug: 'acme', owner: 'user:u1' };
const response = (id: string, text: string) => ({
  id,
  object: 'response',
  output: [{ id: `msg_${id}`, type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }],
});
const input = (text: string) => [{ id: `in_${text}`, type: 'message', role: 'user', content: text }];

describe('the stored responses', () => {
  it('the TTL sweep removes a response at the end of its retention, unread', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const store = createEmbeddedStore({ ttlSweepIntervalMs: 10, now: () => clock.now().getTime() });
    const responses = new ResponseStore(store, clock, {
      retentionDays: 30,
      maxChain: 10,
      maxChainBytes: 1e6,
    });
    const raw = store.collection<{ _id: string }>('llm_responses');
    await responses.save(who, response('resp_a', 'hi'), input('a'), null);
    clock.advance(29 * 86_400_000);
    expect((await raw.find({})).map((d) => d._id)).toEqual(['resp_a']);
    clock.advance(2 * 86_400_000);
    await waitFor(async () => (await raw.find({})).length === 0, { what: 'the expired response swept' });
    await store.close();
  });

  it('a chain is read in order, whatever its length; past its bytes or length it is refused before reading it', async () => {
    const clock = new ManualClock('2026-01-01T00:00:00Z');
    const store = createEmbeddedStore();
    const responses = new ResponseStore(store, clock, {
      retentionDays: 30,
      maxChain: 4,
      maxChainBytes: 2_000,
    });
    let link = null;
    for (const n of ['1', '2', '3']) {
      await responses.save(who, response(`resp_${n}`, `answer ${n}`), input(n), link);
      link = (await responses.chain(who, `resp_${n}`, 0)).link;
    }
    const { items } = await responses.chain(who, 'resp_3', 0);
    expect(items.map((i) => i.id)).toEqual([
      'in_1',
      'msg_resp_1',
      'in_2',
      'msg_resp_2',
      'in_3',
      'msg_resp_3',
    ]);
    await expect(responses.chain(who, 'resp_3', 5_000)).rejects.toMatchObject({
      code: 'RESPONSE_CHAIN_TOO_LONG',
      details: { limit_bytes: 2_000 },
    });
    await responses.save(who, response('resp_4', 'answer 4'), input('4'), link);
    await expect(responses.chain(who, 'resp_4', 0)).rejects.toMatchObject({
      code: 'RESPONSE_CHAIN_TOO_LONG',
    });
    // another owner, another organization: not found, as an unknown id
    for (const other of [
      { ...who, owner: 'user:u2' },
      { ...who, orgSlug: 'other' },
    ])
      await expect(responses.chain(other, 'resp_3', 0)).rejects.toMatchObject({ code: 'RESPONSE_NOT_FOUND' });
    await store.close();
  });
});
