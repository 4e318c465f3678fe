import type { PlatformService } from '@platform/kernel';
import type { AuthContext } from './context';
import type { DataRetention } from './domain/data-retention';
import { type AuthDeps, buildAuthService } from './service';

/** The auth service with its insides in reach: what tests and benchmarks look into. */
export interface AuthServiceUnderTest extends PlatformService {
  /** collections, keys, introspection: everything the routes share */
  readonly context: AuthContext;
  /** the retention job: `run()` makes a pass now */
  readonly retention: DataRetention;
}

/**
 * Test and benchmark entry, not exported by the package: an operator's code gets `createAuthService`,
 * whose type exposes only what running the service needs.
 */
export async function createAuthServiceForTests(deps: AuthDeps): Promise<AuthServiceUnderTest> {
  const { service, context, retention } = await buildAuthService(deps);
  return { ...service, context, retention };
}
