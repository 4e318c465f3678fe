import type { Accounts } from './accounts';
import type { Assistants } from './assistants';
import type { LegacyContext } from './context';
import type { Dialogue } from './dialogue';
import type { Entities } from './entities';
import type { Intents } from './intents';
import type { MessageLimits } from './message-limits';
import type { Retraining } from './retraining';
import type { Understanding } from './understanding';

/** The service's use cases, built once in service.ts and handed to the routes. */
export interface LegacyDomain {
  ctx: LegacyContext;
  accounts: Accounts;
  assistants: Assistants;
  intents: Intents;
  entities: Entities;
  understanding: Understanding;
  retraining: Retraining;
  dialogue: Dialogue;
  messageLimits: MessageLimits;
}
