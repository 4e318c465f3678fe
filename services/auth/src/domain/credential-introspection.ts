import { type OrgContext, type Principal, permissionTree } from '@platform/contracts';
import { type Clock, Unauthenticated } from '@platform/kernel';
import type {
  AccessTokenDoc,
  AuthCollections,
  OrgApiKeyDoc,
  OrgDoc,
  SessionDoc,
  WorkspaceApiKeyDoc,
} from '../data/collections';
import { membershipsOf, resolveActiveOrg } from './active-org';
import { meetsMfaPolicy } from './org-access';
import { findRole, NO_ROLE, type RoleDefinition } from './roles';
import { sha256Hex } from './secrets';

export type CredentialToResolve =
  | { kind: 'session'; userId: string; sessionId: string }
  | { kind: 'access_token'; token: string }
  | { kind: 'api_key'; key: string };

export interface ResolvedPrincipal {
  principal: Principal;
  /** when the credential stops being valid; null when it never expires */
  expiresAt: Date | null;
}

const isLive = (doc: { revokedAt: Date | null; expiresAt: Date | null }, now: Date) =>
  doc.revokedAt === null && (doc.expiresAt === null || doc.expiresAt > now);

export const orgContext = (org: OrgDoc, role: RoleDefinition): OrgContext => ({
  slug: org.slug,
  name: org.name,
  role: { slug: role.slug, permissions: [...role.permissions], scopes: [...role.scopes] },
  groups: [],
  settings: org.settings,
  subscription: org.subscription,
});

/**
 * POST /internal/principal: turns a credential into the principal the edge seals for services
 * (spec 5.2 rule 8). Every lookup is by a unique index (session id, credential hash, org slug,
 * membership by user); unknown, expired or revoked credentials are Unauthenticated.
 */
export class CredentialIntrospection {
  constructor(
    private readonly collections: AuthCollections,
    private readonly clock: Clock,
  ) {}

  async resolve(
    credential: CredentialToResolve,
    pathOrgSlug: string | null,
    correlationId: string,
  ): Promise<ResolvedPrincipal> {
    switch (credential.kind) {
      case 'session': {
        const session = await this.collections.sessions.findOne({ _id: credential.sessionId });
        if (!session || session.userId !== credential.userId || !isLive(session, this.clock.now())) {
          throw new Unauthenticated('Session is unknown, expired or revoked');
        }
        return this.forUser(
          session.userId,
          'session',
          session._id,
          session,
          pathOrgSlug,
          correlationId,
          session.expiresAt,
        );
      }
      case 'access_token': {
        const token = await this.liveAccessToken(credential.token);
        return this.forUser(
          token.userId,
          'access_token',
          token._id,
          token,
          pathOrgSlug,
          correlationId,
          token.expiresAt,
        );
      }
      case 'api_key': {
        const hash = sha256Hex(credential.key);
        if (credential.key.startsWith('iak_')) {
          const key = await this.collections.orgApiKeys.findOne({ keyHash: hash });
          if (!key || !isLive(key, this.clock.now()))
            throw new Unauthenticated('API key is unknown, expired or revoked');
          return this.forOrgKey(key, pathOrgSlug, correlationId);
        }
        const key = await this.collections.workspaceApiKeys.findOne({ keyHash: hash });
        if (!key || !isLive(key, this.clock.now()))
          throw new Unauthenticated('API key is unknown, expired or revoked');
        // a key lives only while its workspace and its organization do (one created while it was being deleted,
        // or a deleted organization's workspace its sweep has not reached: decision 0099)
        const workspace = await this.collections.workspaces.findOne({ _id: key.workspaceId });
        if (!workspace || !(await this.collections.orgs.findOne({ _id: workspace.orgId })))
          throw new Unauthenticated('API key is unknown, expired or revoked');
        return this.forWorkspaceKey(key, correlationId);
      }
    }
  }

  async liveAccessToken(token: string): Promise<AccessTokenDoc> {
    const doc = await this.collections.accessTokens.findOne({ tokenHash: sha256Hex(token) });
    if (!doc || !isLive(doc, this.clock.now()))
      throw new Unauthenticated('Access token is unknown, expired or revoked');
    return doc;
  }

  private async forUser(
    userId: string,
    kind: 'session' | 'access_token',
    credentialId: string,
    holder: SessionDoc | AccessTokenDoc,
    pathOrgSlug: string | null,
    correlationId: string,
    expiresAt: Date,
  ): Promise<ResolvedPrincipal> {
    const [user, memberships] = await Promise.all([
      this.collections.users.findOne({ _id: userId }),
      membershipsOf(this.collections, userId),
    ]);
    if (!user || user.deletedAt) throw new Unauthenticated('User no longer exists');
    const active = resolveActiveOrg(memberships, pathOrgSlug, holder.activeOrgSlug);
    let org: OrgContext | null = null;
    if (active) {
      const orgDoc = await this.collections.orgs.findOne({ _id: active.membership.orgId });
      // An organization that requires two-step verification gives no context to a credential without it.
      if (orgDoc && meetsMfaPolicy(orgDoc, holder))
        org = orgContext(
          orgDoc,
          (await findRole(this.collections, orgDoc, active.membership.role)) ?? NO_ROLE,
        );
    }
    return {
      principal: {
        credential: { kind, id: credentialId },
        session: { id: kind === 'session' ? credentialId : null, org },
        user: {
          id: user._id,
          email: user.email ?? null,
          anonymous: user.anonymous,
          role: null,
          ...(user.platformAdmin ? { platformAdmin: true as const } : {}),
        },
        run: {
          permissions: permissionTree(org?.role.permissions ?? []),
          scopes: org?.role.scopes ?? [],
          correlationId,
          sourceWorkspaceId: null,
        },
      },
      expiresAt,
    };
  }

  private async forOrgKey(
    key: OrgApiKeyDoc,
    pathOrgSlug: string | null,
    correlationId: string,
  ): Promise<ResolvedPrincipal> {
    const orgDoc = await this.collections.orgs.findOne({ _id: key.orgId });
    if (!orgDoc) throw new Unauthenticated('API key is unknown, expired or revoked');
    // The organization comes from the stored record, never from the slug inside the key. In a path
    // naming another organization the key holds nothing (like a user who is not a member there).
    const elsewhere = pathOrgSlug !== null && pathOrgSlug !== orgDoc.slug;
    const role: RoleDefinition = {
      slug: 'api-key',
      description: '',
      permissions: key.permissions,
      scopes: key.scopes,
      builtIn: false,
    };
    return {
      principal: {
        credential: { kind: 'org_api_key', id: key._id, projectId: key.projectId },
        session: { id: null, org: elsewhere ? null : orgContext(orgDoc, role) },
        user: { id: null, email: null, anonymous: false, role: null },
        run: {
          permissions: elsewhere ? {} : permissionTree(key.permissions),
          scopes: elsewhere ? [] : [...key.scopes],
          correlationId,
          sourceWorkspaceId: null,
        },
      },
      expiresAt: key.expiresAt,
    };
  }

  private forWorkspaceKey(key: WorkspaceApiKeyDoc, correlationId: string): ResolvedPrincipal {
    // A workspace key grants exactly its rules: no user, no organization role, no permissions.
    return {
      principal: {
        credential: {
          kind: 'workspace_api_key',
          id: key._id,
          rules: key.rules,
          workspaceId: key.workspaceId,
        },
        session: { id: null, org: null },
        user: { id: null, email: null, anonymous: false, role: null },
        run: { permissions: {}, scopes: [], correlationId, sourceWorkspaceId: null },
      },
      expiresAt: key.expiresAt,
    };
  }
}
