/** The auth service alone, as the benchmark's child process: embedded store in a temp folder, in-process bus. */
import { createInProcessBus } from '@platform/bus';
import { listen, loadConfig, silentLogger, systemClock } from '@platform/kernel';
import { createEmbeddedStore } from '@platform/store';
import { authConfigSchema, createAuthService } from '../../services/auth/src';

async function main() {
  const [port, dataDir] = process.argv.slice(2);
  const config = loadConfig(authConfigSchema, { ...process.env, LOG_LEVEL: 'silent' });
  const store = createEmbeddedStore({ dataDir: dataDir!, compactionIntervalMs: 0 });
  const service = await createAuthService({
    config,
    clock: systemClock,
    logger: silentLogger(),
    store,
    bus: createInProcessBus(),
  });
  await service.start();
  await listen(service.handler, Number(port), '127.0.0.1');
  process.on('SIGINT', () => process.exit(0));
  console.log('ready');
}

void main();
