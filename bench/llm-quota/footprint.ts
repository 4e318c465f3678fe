/**
 * Footprint of counting on the embedded store (decision 0124): N events through the real ingest path (batcher and
 * writer on an embedded store in a temp folder, events read from JSON by the intake), one at a time as at ~33 events/s (the lease and business clocks
 * advance `gapMs` per event, so markers age as they would), then the heap used per event after a GC and the bytes
 * appended to each .db file per event.
 *
 *     node --expose-gc --import tsx bench/llm-quota/footprint.ts [events=5000] [gapMs=30]
 *
 * FOOTPRINT_HEAP=<prefix>: also heap snapshots before and after (<prefix>-1/-2.heapsnapshot, for bench/soak/heap-diff.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { ManualClock, silentLogger } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { quotaCollections } from '../../services/llm-quota/src/data/collections';
import { type CountableEvent, readCompletionEvent } from '../../services/llm-quota/src/ingest/intake';
import { UsageBatcher } from '../../services/llm-quota/src/ingest/usage-batcher';
import { UsageWriter } from '../../services/llm-quota/src/ingest/usage-writer';

const N = Number(process.argv[2] ?? 5_000);
const GAP_MS = Number(process.argv[3] ?? 30);
const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!exposedGc) throw new Error('run with node --expose-gc');
const gc: () => void = exposedGc;

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'quota-footprint-'));
  const store = createEmbeddedStore({ dataDir: dir, compactionIntervalMs: 0 });
  const c = quotaCollections(store);
  const clock = new ManualClock('2026-11-28T07:00:00Z');
  const lease = new ManualClock('2026-11-28T07:00:00Z');
  const writer = new UsageWriter({
    collections: c,
    clock,
    leaseClock: lease,
    leaseMs: 60_000,
    logger: silentLogger(),
  });
  const batcher = new UsageBatcher(writer, 1_024);
  // as the consumer gets them: JSON text read by the intake (each event's strings its own, as in production)
  const event = (i: number): CountableEvent => {
    const raw = JSON.stringify({
      id: `${randomUUID()}`,
      version: 1,
      occurredAt: clock.now().toISOString(),
      orgSlug: 'soak-org',
      userId: `user-${i % 3}`,
      ...(i % 2 ? { apiKeyId: 'key-1' } : {}),
      model: 'mock/chat',
      provider: 'mock',
      usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 },
      cost: 0.00013,
    });
    const intake = readCompletionEvent(raw, clock.now(), 7 * 24 * 3_600_000);
    if (!intake.ok) throw new Error(intake.reason);
    return intake.event;
  };
  // warm up (collections loaded, code compiled), then measure from here
  for (let i = 0; i < 200; i++) await batcher.add(event(-1 - i));
  const sizes = () =>
    Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(path.join(dir, f)).size] as const));
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  if (process.env.FOOTPRINT_HEAP) writeHeapSnapshot(`${process.env.FOOTPRINT_HEAP}-1.heapsnapshot`);
  const filesBefore = sizes();
  for (let i = 0; i < N; i++) {
    await batcher.add(event(i));
    clock.advance(GAP_MS);
    lease.advance(GAP_MS);
  }
  const markers = (await c.counters.find({})).reduce(
    (most, d) => Math.max(most, Object.keys(d.applied ?? {}).length),
    0,
  );
  gc();
  const heapAfter = process.memoryUsage().heapUsed;
  if (process.env.FOOTPRINT_HEAP) writeHeapSnapshot(`${process.env.FOOTPRINT_HEAP}-2.heapsnapshot`);
  const filesAfter = sizes();
  console.log(`${N} events, one per ${GAP_MS} ms`);
  console.log(`heap used per event after GC: ${((heapAfter - heapBefore) / N).toFixed(0)} B`);
  for (const [file, size] of Object.entries(filesAfter)) {
    console.log(`${file}: ${((size - (filesBefore[file] ?? 0)) / N).toFixed(0)} B appended per event`);
  }
  console.log(`most markers on a counter at the end: ${markers}`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

void main();
