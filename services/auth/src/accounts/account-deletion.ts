import { AppError, Forbidden } from '@platform/kernel';
import type { AuthContext } from '../context';
import type { SessionDoc, UserDoc } from '../data/collections';
import {
  type AccountDeletionPlan,
  deleteAccount,
  hasBlockers,
  lastOwnerConflict,
  planAccountDeletion,
} from '../domain/account-deletion';
import { isPlatformSession } from '../domain/caller';
import type { SsoClients } from '../sso/providers';
import type { Accounts } from './accounts';

/** How recent a sign-in must be to delete an account that has no password (signed in with SSO only). */
export const RECENT_SIGN_IN_SECONDS = 600;

/** How the person proves, once more, that it is them. */
export type DeletionProof =
  /** an anonymous user: the session is all there is */
  | { kind: 'none' }
  | { kind: 'password'; email: string; mfa: boolean }
  /** no password (SSO only): a sign-in within RECENT_SIGN_IN_SECONDS, with the providers to sign in again with */
  | { kind: 'recent_sign_in'; recent: boolean; providers: Array<{ slug: string; name: string }> };

export interface DeletionAnswer {
  password?: string;
  mfaCode?: string;
}

/** The person deleting: their user and the session they act with (never an access token or a key). */
export interface Deleter {
  user: UserDoc;
  session: SessionDoc;
}

const reauthenticate = (message: string, needs: string[], extra: Record<string, unknown> = {}) =>
  new Forbidden(message, { error: 'ReauthenticationRequired', details: { needs, ...extra } });

/**
 * Deleting one's own account (`DELETE /v2/me` and the account page), decision 0099: only with a session the person
 * signed in to on the platform itself (an application's token never deletes an account), after proving it is them
 * once more (the password, and the second factor when enrolled; without a password, a sign-in of the last ten
 * minutes), and only when no organization or workspace would be left with members and no owner.
 */
export class AccountDeletion {
  constructor(
    private readonly c: AuthContext,
    private readonly accounts: Accounts,
    private readonly sso: SsoClients,
  ) {}

  plan(userId: string): Promise<AccountDeletionPlan> {
    return planAccountDeletion(this.c, userId);
  }

  async proofNeeded({ user, session }: Deleter): Promise<DeletionProof> {
    if (user.anonymous) return { kind: 'none' };
    // the password of the address the user holds (not a record a sign-up of theirs cut short left, of another)
    const account = user.email
      ? await this.c.collections.accounts.findOne({ _id: user.email, userId: user._id })
      : null;
    if (account)
      return { kind: 'password', email: account._id, mfa: await this.accounts.mfa.enabled(user._id) };
    const identities = await this.sso.collections.identities.find({ userId: user._id });
    const providers = await this.sso.collections.providers.find({
      _id: { $in: identities.map((i) => i.provider) },
    });
    const signedInAt = session.createdAt.getTime();
    return {
      kind: 'recent_sign_in',
      recent:
        session.clientId === this.c.config.PASSWORD_CLIENT_ID &&
        this.c.clock.now().getTime() - signedInAt <= RECENT_SIGN_IN_SECONDS * 1000,
      providers: providers.map((p) => ({ slug: p._id, name: p.name })),
    };
  }

  /**
   * Checks the session and the proof; throws 403 `PlatformSessionRequired`, `ReauthenticationRequired` (with
   * `details.needs`), `InvalidCredentials` or `InvalidMfaCode`, or 429 when the login throttle locked the account
   * or the address (each wrong password or code takes a point of it, as at sign-in).
   */
  async verify(deleter: Deleter, answer: DeletionAnswer, address: string): Promise<void> {
    const { config } = this.c;
    if (!isPlatformSession(deleter.session, config)) {
      throw new Forbidden(
        "An application's token cannot delete an account: sign in on the platform and delete it there",
        { error: 'PlatformSessionRequired' },
      );
    }
    const proof = await this.proofNeeded(deleter);
    if (proof.kind === 'none') return;
    if (proof.kind === 'recent_sign_in') {
      if (proof.recent) return;
      throw reauthenticate(
        `To delete this account, sign in again (within ${RECENT_SIGN_IN_SECONDS / 60} minutes) and delete it then`,
        ['recentSignIn'],
        { providers: proof.providers.map((p) => p.slug) },
      );
    }
    const needs = proof.mfa ? ['password', 'mfaCode'] : ['password'];
    if (!answer.password || (proof.mfa && !answer.mfaCode)) {
      throw reauthenticate(
        proof.mfa
          ? 'To delete this account, send its password and a code of its second factor (mfaCode)'
          : 'To delete this account, send its password',
        needs,
      );
    }
    let user: UserDoc;
    try {
      user = (await this.accounts.authenticate(proof.email, answer.password, address)).user;
    } catch (err) {
      if (err instanceof AppError && err.kind === 'unauthenticated') {
        throw new Forbidden('The password is not right', { error: 'InvalidCredentials' });
      }
      throw err;
    }
    if (user._id !== deleter.user._id)
      throw new Forbidden('The password is not right', { error: 'InvalidCredentials' });
    if (proof.mfa && !(await this.accounts.secondFactor(user, answer.mfaCode!, address))) {
      throw new Forbidden('The code is not right, or was used already', { error: 'InvalidMfaCode' });
    }
  }

  /**
   * Deletes the account after checking, in this order, what blocks it (409 `LastOwner`, before any password is
   * spent) and the proof; mails the address that it is done when the person had proved it theirs (an address
   * never verified may be someone else's, who must not learn of an account made with it). Answers the
   * organizations deleted with it.
   */
  async delete(
    deleter: Deleter,
    answer: DeletionAnswer,
    address: string,
  ): Promise<{ orgsDeleted: string[] }> {
    const { blockers } = await this.plan(deleter.user._id);
    if (hasBlockers(blockers)) throw lastOwnerConflict(blockers);
    await this.verify(deleter, answer, address);
    const done = await deleteAccount(this.c, deleter.user._id);
    if (deleter.user.email && deleter.user.emailVerifiedAt && !deleter.user.anonymous)
      await this.accounts.sendAccountDeleted(deleter.user.email);
    return done;
  }
}
