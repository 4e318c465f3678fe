import { createHash, randomBytes } from 'node:crypto';
import { gcmOpen, gcmSeal } from '@platform/kernel';
import type { Doc } from '@platform/store';
import * as OTPAuth from 'otpauth';
import QRCode from 'qrcode';
import type { AuthContext } from '../context';
import { sha256Hex } from '../domain/secrets';

/** A user's second factor. `_id` is the user id. The TOTP secret is stored AES-256-GCM encrypted. */
export interface MfaDoc extends Doc {
  /** encrypted base32 secret of the confirmed factor; null while only enrolling */
  secret: string | null;
  /** encrypted base32 secret being enrolled (confirmed by a first valid code) */
  pendingSecret: string | null;
  /** sha256 of each unused recovery code */
  recoveryCodes: string[];
  /** TOTP time step of the last accepted code: a code is never accepted twice */
  lastStep: number;
  enabledAt: Date | null;
}

const PERIOD = 30;

/**
 * TOTP (RFC 6238, via otpauth) with recovery codes. Codes are checked against the injected clock with
 * one step of drift either way, and each time step is accepted once (no replay).
 */
export class Mfa {
  private readonly key: Buffer;

  constructor(private readonly c: AuthContext) {
    this.key = createHash('sha256').update(`mfa-secrets\n${c.config.PLATFORM_INTERNAL_SECRET}`).digest();
  }

  private get docs() {
    return this.c.store.collection<MfaDoc>('mfa');
  }

  private seal(plain: string): string {
    const { iv, tag, data } = gcmSeal(this.key, plain);
    return [iv, tag, data].map((b) => b.toString('base64url')).join('.');
  }

  private open(sealed: string): string {
    const [iv = '', tag = '', data = ''] = sealed.split('.');
    const part = (s: string) => Buffer.from(s, 'base64url');
    return gcmOpen(this.key, { iv: part(iv), tag: part(tag), data: part(data) });
  }

  private totp(secret: string, label: string) {
    return new OTPAuth.TOTP({
      issuer: this.c.config.PLATFORM_NAME,
      label,
      algorithm: 'SHA1',
      digits: 6,
      period: PERIOD,
      secret: OTPAuth.Secret.fromBase32(secret),
    });
  }

  async enabled(userId: string): Promise<boolean> {
    return Boolean((await this.docs.findOne({ _id: userId }))?.secret);
  }

  /** A new secret to enrol (replacing an unconfirmed one): its otpauth URI and a QR code (SVG). */
  async begin(userId: string, label: string): Promise<{ secret: string; uri: string; qrSvg: string }> {
    const current = await this.docs.findOne({ _id: userId });
    const secret = current?.pendingSecret
      ? this.open(current.pendingSecret)
      : new OTPAuth.Secret({ size: 20 }).base32;
    await this.docs.updateOne(
      { _id: userId },
      {
        $set: { pendingSecret: this.seal(secret) },
        $setOnInsert: { secret: null, recoveryCodes: [], lastStep: 0, enabledAt: null },
      },
      { upsert: true },
    );
    const uri = this.totp(secret, label).toString();
    return { secret, uri, qrSvg: await QRCode.toString(uri, { type: 'svg', margin: 1 }) };
  }

  private step(secret: string, code: string): number | null {
    const now = this.c.clock.now().getTime();
    const delta = this.totp(secret, '').validate({
      token: code.replace(/\s/g, ''),
      timestamp: now,
      window: 1,
    });
    return delta === null ? null : Math.floor(now / 1000 / PERIOD) + delta;
  }

  /** Confirms enrolment with a first code; answers the recovery codes (shown once). */
  async confirm(userId: string, code: string): Promise<string[] | null> {
    const doc = await this.docs.findOne({ _id: userId });
    if (!doc?.pendingSecret) return null;
    const secret = this.open(doc.pendingSecret);
    const step = this.step(secret, code);
    if (step === null) return null;
    const codes = Array.from({ length: 10 }, () => {
      const raw = randomBytes(5).toString('hex');
      return `${raw.slice(0, 5)}-${raw.slice(5)}`;
    });
    await this.docs.updateOne(
      { _id: userId },
      {
        $set: {
          secret: doc.pendingSecret,
          pendingSecret: null,
          recoveryCodes: codes.map((k) => sha256Hex(k)),
          lastStep: step,
          enabledAt: this.c.clock.now(),
        },
      },
    );
    return codes;
  }

  /** A TOTP code (each time step once) or an unused recovery code (spent). */
  async verify(userId: string, code: string): Promise<boolean> {
    const doc = await this.docs.findOne({ _id: userId });
    if (!doc?.secret || typeof code !== 'string' || code.length > 20) return false;
    const step = /^\s*\d{3}\s?\d{3}\s*$/.test(code) ? this.step(this.open(doc.secret), code) : null;
    if (step !== null) {
      // Compare-and-set on the last step: a replayed (or concurrent) code fails.
      const taken = await this.docs.updateOne(
        { _id: userId, lastStep: { $lt: step } },
        { $set: { lastStep: step } },
      );
      return taken.modified === 1;
    }
    const hash = sha256Hex(code.trim().toLowerCase());
    const spent = await this.docs.updateOne(
      { _id: userId, recoveryCodes: hash },
      { $pull: { recoveryCodes: hash } },
    );
    return spent.modified === 1;
  }

  async remainingRecoveryCodes(userId: string): Promise<number> {
    return (await this.docs.findOne({ _id: userId }))?.recoveryCodes.length ?? 0;
  }

  async disable(userId: string): Promise<void> {
    await this.docs.deleteOne({ _id: userId });
  }
}
