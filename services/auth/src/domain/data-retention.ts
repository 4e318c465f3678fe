import { randomUUID } from 'node:crypto';
import { type Doc, DuplicateKeyError } from '@platform/store';
import type { AuthContext } from '../context';
import { removeAbandonedAnonymousUsers } from './abandoned-anonymous-users';
import { finishInterruptedDeletions } from './account-deletion';
import { removeNullEmailsOfAnonymousUsers } from './anonymous-user-emails';
import { forgetDeletedOrgNames, reannounceRecentOrgDeletions } from './org-deletion';
import { type DatedRecords, giveRemovalTimesToOlderRecords } from './removal-time-backfill';

/** Which instance runs the retention passes, until when (every instance may; one at a time saves the work). */
interface LeaseDoc extends Doc {
  owner: string;
  until: Date;
}

const LEASE_ID = 'data-retention';

export interface RetentionPass {
  /** older records given a removal time */
  dated: DatedRecords;
  /** abandoned anonymous users removed */
  anonymousUsersRemoved: number;
  /** anonymous users an earlier version made, rid of their `email: null` */
  nullEmailsRemoved: number;
  /** account and organization deletions a crash had cut short, finished (decision 0099) */
  deletionsFinished: { accounts: number; organizations: number };
  /** tombstones of deleted organizations an earlier version wrote, rid of the organization's name */
  tombstonesTrimmed: number;
}

/**
 * The part of auth's data retention that a TTL index cannot express (decision 0094): dating records written
 * without a removal time, removing anonymous users that nothing names any more (and the `email: null` earlier
 * versions gave the others), finishing account and organization deletions a crash cut short (0099), announcing the
 * last day's organization deletions again (`auth.org.deleted` is sent once; llm-quota may have been away), and
 * removing the organization names older tombstones kept (0103). A pass runs at start and every RETENTION_INTERVAL_MS (the timer never holds the
 * process); one instance at a time holds a lease of two intervals in the store, renewed by its own passes and
 * given up at stop. Every write of a pass is conditional, so instances that run one at once (a lease taken over
 * mid-pass) do no harm.
 */
export class DataRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private busy = false;
  private readonly owner = randomUUID();

  constructor(private readonly c: AuthContext) {}

  private get leases() {
    return this.c.store.collection<LeaseDoc>('job_leases');
  }

  start(): void {
    this.timer = setInterval(() => {
      if (!this.busy) void this.run();
    }, this.c.config.RETENTION_INTERVAL_MS);
    this.timer.unref();
    void this.run();
  }

  /** Stops the timer, lets a pass under way finish, and hands the lease on. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
    await this.leases
      .updateOne({ _id: LEASE_ID, owner: this.owner }, { $set: { until: this.c.clock.now() } })
      .catch(() => undefined);
  }

  /**
   * One pass, after any pass under way: what it did, or null when another instance holds the lease or the store
   * failed (logged; the next pass tries again).
   */
  run(): Promise<RetentionPass | null> {
    const pass = this.running.then(() => this.pass());
    this.running = pass;
    return pass;
  }

  private async pass(): Promise<RetentionPass | null> {
    this.busy = true;
    try {
      if (!(await this.takeLease())) return null;
      const dated = await giveRemovalTimesToOlderRecords(this.c);
      const anonymousUsersRemoved = await removeAbandonedAnonymousUsers(this.c);
      const nullEmailsRemoved = await removeNullEmailsOfAnonymousUsers(this.c);
      const deletionsFinished = await finishInterruptedDeletions(this.c);
      await reannounceRecentOrgDeletions(this.c);
      const tombstonesTrimmed = await forgetDeletedOrgNames(this.c);
      if (
        anonymousUsersRemoved > 0 ||
        nullEmailsRemoved > 0 ||
        tombstonesTrimmed > 0 ||
        [...Object.values(dated), ...Object.values(deletionsFinished)].some((n) => n > 0)
      ) {
        this.c.logger.info(
          { dated, anonymousUsersRemoved, nullEmailsRemoved, deletionsFinished, tombstonesTrimmed },
          'data retention pass',
        );
      }
      return { dated, anonymousUsersRemoved, nullEmailsRemoved, deletionsFinished, tombstonesTrimmed };
    } catch (err) {
      this.c.logger.warn({ err }, 'data retention pass failed; the next one tries again');
      return null;
    } finally {
      this.busy = false;
    }
  }

  /** Takes the lease when it is free, has lapsed, or is this instance's own (compare-and-set, then insert). */
  private async takeLease(): Promise<boolean> {
    const now = this.c.clock.now();
    const until = new Date(now.getTime() + 2 * this.c.config.RETENTION_INTERVAL_MS);
    const { matched } = await this.leases.updateOne(
      { _id: LEASE_ID, $or: [{ owner: this.owner }, { until: { $lte: now } }] },
      { $set: { owner: this.owner, until } },
    );
    if (matched > 0) return true;
    try {
      await this.leases.insertOne({ _id: LEASE_ID, owner: this.owner, until });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }
}
