import type { Bus } from '@platform/bus';
import type { Clock, Logger } from '@platform/kernel';
import type { Store } from '@platform/store';
import type { AuthConfig } from './config';
import type { AuthCollections } from './data/collections';
import type { CredentialIntrospection } from './domain/credential-introspection';
import type { AuthEvents } from './domain/events';
import type { KeyRotation } from './domain/key-rotation';

/** Everything a route of auth needs, built once by createAuthService. */
export interface AuthContext {
  config: Readonly<AuthConfig>;
  clock: Clock;
  logger: Logger;
  store: Store;
  bus: Bus;
  collections: AuthCollections;
  events: AuthEvents;
  keys: KeyRotation;
  introspection: CredentialIntrospection;
}
