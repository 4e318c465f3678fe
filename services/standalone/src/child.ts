import { type Bus, type BusReporting, createIpcBusClient, parentProcessChannel } from '@platform/bus';
import { EDGE_MAX_HEADER_BYTES, runServiceMain } from '@platform/runtime';
import type { ListeningMessage } from './service-process';
import { edgeEntry, platformServices } from './services';

/**
 * One service of `pnpm start`, in a process of its own: the production entry (configuration, store,
 * listen, graceful SIGTERM) with the IPC bus to the parent when no NATS_URL is set. It stops when its
 * parent goes away, whatever the way.
 */
export function runStandaloneChild(name: string): void {
  const service = name === edgeEntry.name ? undefined : platformServices.find((s) => s.name === name);
  if (!service && name !== edgeEntry.name) {
    console.error(`unknown service "${name}"`);
    process.exit(1);
  }
  let bus: Bus | undefined;
  process.on('disconnect', () => {
    // the hub went with the parent: what waits for its answer (a consumer stopping, a publish) fails now
    // instead of holding the shutdown forever, so the service still drains and closes its store
    void bus?.close();
    process.kill(process.pid, 'SIGTERM');
  });
  const common = {
    name,
    defaultPort: 0,
    localBus: (reporting: BusReporting) => {
      bus = createIpcBusClient(parentProcessChannel(), reporting);
      return bus;
    },
    // after what the bus queued this turn (its channel flushes on setImmediate, in order): the parent
    // never sees a child listening before the subscriptions it made
    onListening: (url: string) =>
      setImmediate(() => process.send?.({ platform: 'listening', url } satisfies ListeningMessage)),
  };
  void (service
    ? runServiceMain({ ...common, schema: service.schema, create: service.create })
    : runServiceMain({
        ...common,
        schema: edgeEntry.schema,
        usesStore: false,
        // the production edge's limit: a head it refuses with 431 is refused here too
        maxHeaderBytes: EDGE_MAX_HEADER_BYTES,
        create: edgeEntry.create,
      }));
}
