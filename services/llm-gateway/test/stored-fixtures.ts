import { APIError, NotFoundError } from 'openai';
import type { GatewayWorld } from './support';

/** Who calls: a user's session JWT or `at:` token, or an organization API key. */
export type Caller = { bearer: string } | { apiKey: string };

export const DAY_MS = 86_400_000;

/** the error a call raises, or null */
export const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => null,
    (err: unknown) => err,
  );

/** Expects the SDK's NotFoundError with the envelope's `code` (the unknown id's 404). */
export const expectNotFoundWith = (code: string) => async (call: Promise<unknown>) => {
  const err = await failure(call);
  expect(err).toBeInstanceOf(NotFoundError);
  expect((err as APIError).error).toBe(code);
};

/** the chat messages the simulator received last */
export const sentMessages = (w: GatewayWorld) =>
  (w.sim.requests().at(-1)!.body as { messages: unknown[] }).messages;

/** A new organization API key of `slug` with `models:read`. */
export const orgKey = async (w: GatewayWorld, as: Caller, slug: string): Promise<string> =>
  (
    await w.call('base', 'POST', `/v2/orgs/${slug}/apikeys`, as, {
      name: `key-${Math.random()}`,
      permissions: ['models:read'],
    })
  ).body.apiKey as string;

/**
 * Everyone around what `owner` of organization `slug` makes: the same user by an `at:` access token, and the
 * strangers to it (another member of the organization, its API key, the owner of another organization).
 */
export async function aroundOwner(
  w: GatewayWorld,
  owner: { token: string },
  slug: string,
): Promise<{ sameUser: Caller; key: string; strangers: Caller[] }> {
  const at = await w.call(
    'base',
    'POST',
    '/v2/user/accessTokens',
    { bearer: owner.token },
    { name: `${slug}-at`, expiresAt: new Date(Date.now() + DAY_MS).toISOString() },
  );
  const member = await w.login();
  const added = await w.call(
    'base',
    'POST',
    `/v2/orgs/${slug}/members`,
    { bearer: owner.token },
    { userId: member.userId, role: 'member' },
  );
  expect(added.status).toBe(201);
  const key = await orgKey(w, { bearer: owner.token }, slug);
  const { owner: outsider } = await w.org(`${slug}-other`);
  return {
    sameUser: { bearer: at.body.token as string },
    key,
    strangers: [{ bearer: member.token }, { apiKey: key }, { bearer: outsider.token }],
  };
}
