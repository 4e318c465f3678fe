import type { Logger } from '@platform/kernel';
import nodemailer from 'nodemailer';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/** Sends the account mails (verification, password reset). */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/**
 * SMTP through nodemailer when SMTP_URL is set; otherwise the mail is written to the log, so a
 * newcomer running `pnpm start` can follow the link without a mail server.
 */
export function createMailer(settings: { smtpUrl?: string; from: string }, logger: Logger): Mailer {
  if (!settings.smtpUrl) {
    return {
      async send(mail) {
        logger.info(
          { mail: { to: mail.to, subject: mail.subject } },
          `mail (no SMTP_URL set):\n${mail.text}`,
        );
      },
    };
  }
  const transport = nodemailer.createTransport(settings.smtpUrl);
  return {
    async send(mail) {
      await transport.sendMail({ from: settings.from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
