/**
 * The "LLM gateway" of the ingestion benchmark, in its own process as a real one would be: publishes
 * events 0..N-1 of a run into JetStream (acknowledged publishes, 1,000 in flight), then the first
 * `duplicates` again. Usage: publisher.ts <natsUrl> <run> <N> <duplicates> <occurredAt>
 */
import { Subjects } from '@platform/contracts';
import { connect, StringCodec } from 'nats';
import { benchEvent } from './events';

async function main() {
  const [url, run, n, duplicates, occurredAt] = process.argv.slice(2) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const codec = StringCodec();
  const nc = await connect({ servers: url });
  const js = nc.jetstream();
  const indexes = [
    ...Array.from({ length: Number(n) }, (_, i) => i),
    ...Array.from({ length: Number(duplicates) }, (_, i) => i),
  ];
  const window = 1_000;
  for (let i = 0; i < indexes.length; i += window) {
    await Promise.all(
      indexes
        .slice(i, i + window)
        .map((k) =>
          js.publish(Subjects.llmCompletion, codec.encode(JSON.stringify(benchEvent(run, k, occurredAt)))),
        ),
    );
  }
  await nc.drain();
}

void main().catch((err) => {
  console.error(err);
  process.exit(1);
});
