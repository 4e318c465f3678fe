import type { CountableEvent } from './intake';
import { UsageBatcher } from './usage-batcher';
import type { Outcome } from './usage-writer';

const event = (id: string) => ({ id }) as CountableEvent;

describe('UsageBatcher', () => {
  it('batches events added together, each id once, and answers every caller', async () => {
    const batches: string[][] = [];
    const writer = {
      apply: async (events: CountableEvent[]) => {
        batches.push(events.map((e) => e.id));
        return new Map<string, Outcome>(events.map((e) => [e.id, e.id === 'held' ? 'retry' : 'counted']));
      },
    };
    const batcher = new UsageBatcher(writer, 3);
    const results = await Promise.all(['a', 'b', 'a', 'c', 'd', 'held'].map((id) => batcher.add(event(id))));
    expect(batches).toEqual([
      ['a', 'b'],
      ['c', 'd', 'held'],
    ]);
    expect(results).toEqual(['counted', 'counted', 'duplicate', 'counted', 'counted', 'retry']);
  });

  it('fails the events of a batch the writer could not journal, and goes on with the next', async () => {
    let calls = 0;
    const writer = {
      apply: async (events: CountableEvent[]) => {
        if (calls++ === 0) throw new Error('store down');
        return new Map<string, Outcome>(events.map((e) => [e.id, 'counted']));
      },
    };
    const batcher = new UsageBatcher(writer, 1);
    const [first, second] = await Promise.allSettled([batcher.add(event('x')), batcher.add(event('y'))]);
    expect(first).toMatchObject({ status: 'rejected', reason: new Error('store down') });
    expect(second).toEqual({ status: 'fulfilled', value: 'counted' });
    await batcher.idle();
  });

  it('under a steady stream, starts a batch at most once per linger: later events join the next batch', async () => {
    const run = async (lingerMs: number) => {
      const batches: string[][] = [];
      const writer = {
        apply: async (events: CountableEvent[]) => {
          batches.push(events.map((e) => e.id));
          return new Map<string, Outcome>(events.map((e) => [e.id, 'counted']));
        },
      };
      const batcher = new UsageBatcher(writer, 100, undefined, lingerMs);
      await batcher.add(event('a')); // alone: counted at once
      const b = batcher.add(event('b'));
      // c arrives a few turns of the event loop later, after b's batch could have started
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      const c = batcher.add(event('c'));
      await Promise.all([b, c]);
      return batches;
    };
    expect(await run(0)).toEqual([['a'], ['b'], ['c']]);
    expect(await run(300)).toEqual([['a'], ['b', 'c']]);
  });
});
