/** The provider simulator in its own process, so the benchmark's client measures only itself. */
import { startProviderSimulator } from '@platform/testkit';

startProviderSimulator({ port: Number(process.env.SIM_PORT) }).then((sim) => {
  process.stdout.write(`${sim.url}\n`);
  process.on('SIGTERM', () => sim.close().then(() => process.exit(0)));
});
