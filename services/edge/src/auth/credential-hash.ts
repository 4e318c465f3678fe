import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';

type OneShotHash = (algorithm: string, data: string, encoding: 'hex') => string;
const oneShot: OneShotHash | undefined = (crypto as unknown as { hash?: OneShotHash }).hash;

/**
 * sha256 (hex) of a credential as the client sent it: the key of the edge's caches, and the
 * `credentialHash` of `auth.credential.revoked`. Uses the one-shot `crypto.hash` where Node has it.
 */
export const credentialHash: (value: string) => string = oneShot
  ? (value) => oneShot('sha256', value, 'hex')
  : (value) => createHash('sha256').update(value).digest('hex');
