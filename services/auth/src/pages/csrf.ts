import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Per-form CSRF tokens for the JavaScript-free pages: an HMAC, under a key derived from the internal
 * secret, of what the form is bound to (the page's session id, an OIDC interaction uid, or the
 * browser's random `csrf-token` cookie before sign-in) and the form's purpose. A cross-site page can
 * read neither the binding nor the key, so it cannot forge the hidden field.
 */
export class FormTokens {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('page-form-csrf').digest();
  }

  issue(binding: string, purpose: string): string {
    return createHmac('sha256', this.key).update(`${purpose}\n${binding}`).digest('base64url');
  }

  valid(binding: string | undefined, purpose: string, presented: unknown): boolean {
    if (!binding || typeof presented !== 'string' || presented.length > 100) return false;
    const expected = Buffer.from(this.issue(binding, purpose));
    const given = Buffer.from(presented);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
