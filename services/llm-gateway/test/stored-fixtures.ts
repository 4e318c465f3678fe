import { Subjects } from '@platform/contracts';
import { waitFor } from '@platform/testkit';
import { APIError, NotFoundError } from 'openai';
import { accessToken, type GatewayWorld, orgApiKey } from './support';

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
export const orgKey = (w: GatewayWorld, as: Caller, slug: string): Promise<string> => orgApiKey(w, as, slug);

/**
 * Everyone around what `owner` of organization `slug` makes: the same user by an `at:` access token, and the
 * strangers to it (another member of the organization, its API key, the owner of another organization).
 */
export async function aroundOwner(
  w: GatewayWorld,
  owner: { token: string },
  slug: string,
): Promise<{ sameUser: Caller; key: string; strangers: Caller[] }> {
  const at = await accessToken(w, { bearer: owner.token }, `${slug}-at`);
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
    sameUser: { bearer: at },
    key,
    strangers: [{ bearer: member.token }, { apiKey: key }, { bearer: outsider.token }],
  };
}

/** A stored input message as the API lists it: an id of its own, completed. */
export const storedInput = (role: 'developer' | 'user', text: string) => ({
  id: expect.stringMatching(/^msg_/),
  type: 'message',
  role,
  content: [{ type: 'input_text', text }],
  status: 'completed',
});

/** The event auth publishes when an organization is deleted (the organization itself stays, to be asked). */
export const announceOrgDeleted = (w: GatewayWorld, orgSlug: string) =>
  w.p.bus.publish(Subjects.orgDeleted, {
    version: 1,
    orgId: 'org-id',
    orgSlug,
    at: new Date().toISOString(),
  });

/** The event auth publishes when a user is deleted. */
export const announceUserDeleted = (w: GatewayWorld, userId: string) =>
  w.p.bus.publish(Subjects.credentialRevoked, {
    version: 1,
    kind: 'user',
    id: userId,
    at: new Date().toISOString(),
  });

/** Waits until GET `path` of the gateway answers `as` with a 404: what `path` names is gone. */
export const untilGone = (w: GatewayWorld, path: string, as: Caller) =>
  waitFor(async () => (await w.call('gateway', 'GET', path, as)).status === 404, { what: `${path} gone` });
