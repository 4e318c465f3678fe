import type { Clock, Logger } from '@platform/kernel';
import type { LlmQuotaConfig } from '../config';
import type { OrgSettingsDoc, QuotaCollections } from '../data/collections';
import type { SettingsRepository } from '../data/settings-repo';
import type { PlanCatalog } from '../domain/plans';
import type { PlanInForce } from '../domain/usage-report';

/** What the routes need. */
export interface RouteDeps {
  config: LlmQuotaConfig;
  clock: Clock;
  logger: Logger;
  /** tells the gateways an organization's settings changed (they drop their cached copy); never throws */
  settingsChanged(orgSlug: string): Promise<void>;
  collections: QuotaCollections;
  settings: SettingsRepository;
  catalog: PlanCatalog;
  planOf(settings: OrgSettingsDoc): PlanInForce;
}
