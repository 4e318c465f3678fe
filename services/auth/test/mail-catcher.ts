import { waitFor } from '@platform/testkit';
import { SMTPServer } from 'smtp-server';

export interface CaughtMail {
  to: string[];
  raw: string;
}

/** A real SMTP server on a loopback port that keeps every mail it receives (no auth, no TLS). */
export async function startMailCatcher() {
  const mails: CaughtMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        mails.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    /** the first link under `path` in the newest mail to `to` (waits for it to arrive) */
    async linkFor(to: string, path: string): Promise<string> {
      const pattern = new RegExp(`https?://[^\\s]+${path.replace(/[/]/g, '\\/')}\\?token=[A-Za-z0-9_-]+`);
      let link: string | undefined;
      await waitFor(() => {
        const mail = [...mails].reverse().find((m) => m.to.includes(to) && pattern.test(unfold(m.raw)));
        link = mail ? pattern.exec(unfold(mail.raw))![0] : undefined;
        return link !== undefined;
      });
      return link!;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Undoes quoted-printable soft line breaks and `=3D`, so links read whole. */
function unfold(raw: string): string {
  return raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
}
