import type { PlatformService } from '@platform/kernel';
import { buildEdgeService, type EdgeDeps, type EdgeInternals } from './service';

/** The edge with its insides in reach: what tests and benchmarks look into. */
export interface EdgeServiceUnderTest extends PlatformService {
  readonly internals: EdgeInternals;
}

/**
 * Test and benchmark entry, not exported by the package: an operator's code gets `createEdgeService`,
 * whose type exposes only what running the edge needs.
 */
export async function createEdgeServiceForTests(deps: EdgeDeps): Promise<EdgeServiceUnderTest> {
  const { service, internals } = await buildEdgeService(deps);
  return { ...service, internals };
}
