import { Writable } from 'node:stream';
import { createLogger } from '@platform/kernel';
import { createEmbeddedStore, type Store } from '@platform/store';
import { type AuthHarness, randomAddress, startAuth } from './helpers';

/**
 * Account mails without SMTP_URL. Their links (email verification, password reset) work as credentials: on the
 * embedded store (`pnpm start`, one machine) the log shows them, so a newcomer can follow them; on MongoDB,
 * where logs are shipped and kept, it never does.
 */

const FAST_HASH = { PASSWORD_SCRYPT_N: '1024', PASSWORD_SCRYPT_P: '1' };
let emailCounter = 0;
const newEmail = () => `unsent${++emailCounter}-${Date.now()}@example.com`;

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}
const WARN = 40;

/** auth on `store` without SMTP_URL, its log lines kept */
async function startWithoutSmtp(store: Store, env: Record<string, string> = {}) {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const logger = createLogger({ name: 'auth', level: 'info', destination: sink });
  const h = await startAuth({ store, logger, env: { ...FAST_HASH, ...env } });
  return { h, lines };
}

/** a signup and a password reset of one new account: the two mails with links */
async function mailBothLinks(h: AuthHarness): Promise<string> {
  const email = newEmail();
  const signup = await h.http
    .post('/v2/signup')
    .set('x-forwarded-for', randomAddress())
    .send({ email, password: 'correct horse battery' });
  expect(signup.status).toBe(201);
  const forgot = await h.http
    .post('/v2/password/forgot')
    .set('x-forwarded-for', randomAddress())
    .send({ email });
  expect(forgot.status).toBe(202);
  return email;
}

describe('account mails without SMTP_URL', () => {
  it('on the embedded store, logs each mail with its link', async () => {
    const store = createEmbeddedStore();
    const { h, lines } = await startWithoutSmtp(store);
    try {
      const email = await mailBothLinks(h);
      const mails = lines.filter((l) => (l.mail as { to?: string } | undefined)?.to === email);
      expect(mails.map((l) => l.msg)).toEqual([
        expect.stringMatching(/\/account\/verify-email\?token=[A-Za-z0-9_-]+/),
        expect.stringMatching(/\/account\/reset-password\?token=[A-Za-z0-9_-]+/),
      ]);
    } finally {
      await h.stop();
      await store.close();
    }
  });

  it('on MongoDB, never logs a link: it says once at start that mails are not sent, then which were not', async () => {
    const store = createEmbeddedStore();
    const { h, lines } = await startWithoutSmtp(
      // what auth decides from the engine (no MongoDB server runs here)
      { ...store, engine: 'mongodb' },
      { SIGNING_KEYS_ENCRYPTION_KEY: 'test-only-signing-keys-secret-0123456789' },
    );
    try {
      const atStart = lines.filter((l) => l.msg.includes('SMTP_URL'));
      expect(atStart).toEqual([
        expect.objectContaining({
          level: WARN,
          msg: expect.stringMatching(/^SMTP_URL is not set: account mails/),
        }),
      ]);
      const email = await mailBothLinks(h);
      expect(lines.filter((l) => (l.mail as { to?: string } | undefined)?.to === email)).toEqual([
        expect.objectContaining({ level: WARN, msg: `a mail to ${email} was not sent: SMTP_URL is not set` }),
        expect.objectContaining({ level: WARN, msg: `a mail to ${email} was not sent: SMTP_URL is not set` }),
      ]);
      for (const line of lines)
        expect(JSON.stringify(line)).not.toMatch(/token=|verify-email|reset-password/);
      // still one start-up warning: not one per mail
      expect(lines.filter((l) => l.msg.startsWith('SMTP_URL is not set'))).toHaveLength(1);
    } finally {
      await h.stop();
      await store.close();
    }
  });
});
