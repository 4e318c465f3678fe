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

export interface MailerSettings {
  smtpUrl?: string;
  from: string;
  /**
   * without SMTP_URL, whether a mail's text goes to the log: yes on the embedded store (`pnpm start`, one
   * machine), never on MongoDB, where logs are shipped and kept and the mailed links work as credentials
   */
  logMailText: boolean;
}

/**
 * SMTP through nodemailer when SMTP_URL is set. Otherwise, on the embedded store, the mail is written to
 * the log so a newcomer running `pnpm start` can follow the link without a mail server; on MongoDB the
 * log says only that a mail to the address was not sent (and, once at start, that none will be).
 */
export function createMailer(settings: MailerSettings, logger: Logger): Mailer {
  if (!settings.smtpUrl && settings.logMailText) {
    return {
      async send(mail) {
        logger.info(
          { mail: { to: mail.to, subject: mail.subject } },
          `mail (no SMTP_URL set):\n${mail.text}`,
        );
      },
    };
  }
  if (!settings.smtpUrl) {
    logger.warn('SMTP_URL is not set: account mails (email verification, password reset) will not be sent');
    return {
      async send(mail) {
        logger.warn(
          { mail: { to: mail.to, subject: mail.subject } },
          `a mail to ${mail.to} was not sent: SMTP_URL is not set`,
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
