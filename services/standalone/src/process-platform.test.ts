import { stopGraceMs } from './process-platform';

describe("pnpm start's stop", () => {
  it('gives each service its drain (SHUTDOWN_DRAIN_SECONDS, however long) and the rest of its stop before SIGKILL', () => {
    expect(stopGraceMs(10)).toBe(25_000); // the default drain
    expect(stopGraceMs(0)).toBe(15_000);
    // the deployments' drain of long streamed completions: not cut midway, as a fixed 15 s grace did
    expect(stopGraceMs(120)).toBe(135_000);
  });
});
