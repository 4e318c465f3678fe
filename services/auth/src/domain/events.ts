import type { Bus } from '@platform/bus';
import { type CredentialRevokedEvent, Subjects } from '@platform/contracts';
import type { Clock, Logger } from '@platform/kernel';

/**
 * What auth tells the edges. Publishing is best effort after the store write has succeeded: a lost
 * message is healed by the edge's cache TTL (PRINCIPAL_CACHE_TTL_SECONDS) and JWKS reconciliation,
 * so a bus hiccup never fails a request whose change is already durable.
 */
export class AuthEvents {
  constructor(
    private readonly bus: Bus,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async jwksUpdated(created: string[], deleted: string[]): Promise<void> {
    const payload = { version: 1 as const, created, deleted, at: this.clock.now().toISOString() };
    await this.safely('jwks.updated', async () => {
      await this.bus.publish(Subjects.gatewayJwksUpdated, payload);
      await this.bus.publish(Subjects.runtimeJwksUpdated, payload);
    });
  }

  async credentialRevoked(
    kind: CredentialRevokedEvent['kind'],
    id: string,
    credentialHash?: string,
  ): Promise<void> {
    await this.safely('credential.revoked', () =>
      this.bus.publish(Subjects.credentialRevoked, {
        version: 1,
        kind,
        id,
        ...(credentialHash ? { credentialHash } : {}),
        at: this.clock.now().toISOString(),
      }),
    );
  }

  /** a user's memberships or active organization changed; without userId: every member of the org */
  async membershipChanged(orgSlug: string, userId?: string): Promise<void> {
    await this.safely('membership.changed', () =>
      this.bus.publish(Subjects.membershipChanged, {
        version: 1,
        orgSlug,
        ...(userId ? { userId } : {}),
        at: this.clock.now().toISOString(),
      }),
    );
  }

  /** an organization was deleted (llm-quota stops serving its settings); its slug stays reserved */
  async orgDeleted(orgId: string, orgSlug: string): Promise<void> {
    await this.safely('org.deleted', () =>
      this.bus.publish(Subjects.orgDeleted, {
        version: 1,
        orgId,
        orgSlug,
        at: this.clock.now().toISOString(),
      }),
    );
  }

  private async safely(what: string, publish: () => Promise<void>): Promise<void> {
    try {
      await publish();
    } catch (err) {
      this.logger.warn({ err, event: what }, 'event not published; edge caches heal by TTL');
    }
  }
}
