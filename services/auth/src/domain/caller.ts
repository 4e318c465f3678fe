import type { Principal } from '@platform/contracts';
import { type Clock, Forbidden, requirePrincipal, Unauthenticated } from '@platform/kernel';
import type {
  AccessTokenDoc,
  AuthCollections,
  OrgApiKeyDoc,
  SessionDoc,
  UserDoc,
  WorkspaceApiKeyDoc,
} from '../data/collections';
import { FIRST_PARTY_CLIENT_ID } from '../oidc/clients';

/**
 * Who is calling one of auth's own routes. The edge-sealed principal says which credential was used;
 * auth reloads that credential's record from its own store (one lookup by id), so its routes act on
 * current data, never on an edge cache that may be a few seconds old.
 */
export type Caller =
  | { kind: 'user'; via: 'session'; credentialId: string; user: UserDoc; holder: SessionDoc }
  | { kind: 'user'; via: 'access_token'; credentialId: string; user: UserDoc; holder: AccessTokenDoc }
  | { kind: 'org_api_key'; key: OrgApiKeyDoc }
  | { kind: 'workspace_api_key'; key: WorkspaceApiKeyDoc };

export type UserCaller = Extract<Caller, { kind: 'user' }>;

const live = (doc: { revokedAt: Date | null; expiresAt: Date | null } | null, now: Date) =>
  doc !== null && doc.revokedAt === null && (doc.expiresAt === null || doc.expiresAt > now);

export async function loadCaller(
  collections: AuthCollections,
  clock: Clock,
  req: { principal?: Principal | null },
): Promise<Caller> {
  const principal = requirePrincipal(req);
  const now = clock.now();
  const { kind, id } = principal.credential;
  switch (kind) {
    case 'session':
    case 'access_token': {
      const holder =
        kind === 'session'
          ? await collections.sessions.findOne({ _id: id })
          : await collections.accessTokens.findOne({ _id: id });
      if (!live(holder, now) || holder!.userId !== principal.user.id) throw new Unauthenticated();
      const user = await collections.users.findOne({ _id: holder!.userId });
      // an account being deleted accepts no credential from the moment it was asked (decision 0099)
      if (!user || user.deletedAt) throw new Unauthenticated();
      return { kind: 'user', via: kind, credentialId: id, user, holder: holder as never };
    }
    case 'org_api_key': {
      const key = await collections.orgApiKeys.findOne({ _id: id });
      if (!live(key, now)) throw new Unauthenticated();
      return { kind: 'org_api_key', key: key! };
    }
    case 'workspace_api_key': {
      const key = await collections.workspaceApiKeys.findOne({ _id: id });
      if (!live(key, now)) throw new Unauthenticated();
      return { kind: 'workspace_api_key', key: key! };
    }
  }
}

/** Routes about "me" need a user; API keys carry none. */
export function requireUser(caller: Caller): UserCaller {
  if (caller.kind !== 'user') throw new Forbidden('This route needs a user credential, not an API key');
  return caller;
}

type PlatformClients = { PASSWORD_CLIENT_ID: string; ANONYMOUS_CLIENT_ID: string };

/** A session of the platform's own sign-in (password, SSO, anonymous), not an application's token. */
export const isPlatformSession = (session: SessionDoc, config: PlatformClients): boolean =>
  session.clientId === config.PASSWORD_CLIENT_ID || session.clientId === config.ANONYMOUS_CLIENT_ID;

/**
 * A session of the platform's own, not a third-party application's token: its sign-in's (`isPlatformSession`) or
 * `platform-web`'s, the platform's own pages as an OpenID client (no grant a person revokes: it holds `api` without
 * asking, 0109). What such a session may do that an application's may not: mint credentials, use the account pages.
 */
export const isOwnSession = (session: SessionDoc, config: PlatformClients): boolean =>
  isPlatformSession(session, config) || session.clientId === FIRST_PARTY_CLIENT_ID;

/**
 * Minting a credential (an `at:` token, an API key) is the person's own act on the platform: an application's token,
 * even with the `api` scope (decision 0109), may not, since what it minted would outlive the person revoking the
 * application's grant. The platform's own sessions are those of its password (and SSO) and anonymous clients, as
 * for deleting an account (decision 0099), and of `platform-web`, the platform's own pages as an OpenID client (no
 * grant a person revokes: it holds `api` without asking, 0109).
 */
export function requireNoApplication<C extends UserCaller>(caller: C, config: PlatformClients): C {
  if (caller.via === 'session' && !isOwnSession(caller.holder, config))
    throw new Forbidden(
      "An application's token cannot create credentials: sign in on the platform and create them there",
      { error: 'PlatformSessionRequired' },
    );
  return caller;
}

/**
 * Revoking a key: a person on the platform's own session acts with what their role gives them; any other credential
 * (an API key, an `at:` token, an application's token) only on keys whose rights are within its own, as for minting
 * (a leaked credential allowed to manage keys cannot disarm the stronger keys of those who would respond).
 */
export const boundByItsOwnRights = (caller: Caller, config: PlatformClients): boolean =>
  caller.kind !== 'user' || caller.via !== 'session' || !isOwnSession(caller.holder, config);

/** Minting or listing credentials needs an interactive session, not a long-lived token or key. */
export function requireSession(caller: Caller): Extract<Caller, { via: 'session' }> {
  const user = requireUser(caller);
  if (user.via !== 'session') throw new Forbidden('This route needs a session, not an access token');
  return user;
}
