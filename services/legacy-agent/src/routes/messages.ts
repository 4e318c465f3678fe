import { randomUUID } from 'node:crypto';
import {
  type ErrorKind,
  envelopeOf,
  forwardedViewOf,
  jsonBody,
  type Logger,
  MethodNotAllowed,
  markSuspectJson,
  parseInput,
  suspectJsonRefusal,
  toAppError,
} from '@platform/kernel';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { LegacyDomain } from '../domain';
import type { AssistantDoc } from '../persistence/collections';
import { allowOrigin } from './cors';
import { bearerToken } from './credentials';
import { messageBody } from './schemas';

/** `status.errorType` of a failed Messages call, by kind of error (documented in the README). */
export const MESSAGES_ERROR_TYPES: Record<ErrorKind | 'internal', string> = {
  invalid_input: 'invalid_request',
  unauthenticated: 'unauthorized',
  forbidden: 'forbidden',
  not_found: 'not_found',
  method_not_allowed: 'invalid_request',
  conflict: 'conflict',
  gone: 'gone',
  payload_too_large: 'payload_too_large',
  unsupported_media_type: 'unsupported_media_type',
  rate_limited: 'rate_limited',
  unavailable: 'unavailable',
  bad_gateway: 'internal_error',
  timeout: 'internal_error',
  request_timeout: 'invalid_request',
  header_fields_too_large: 'invalid_request',
  internal: 'internal_error',
};

/** A failed `/v1/Messages` call: the legacy reply shape, with the outcome in `status`. */
export const MessagesErrorSchema = z
  .looseObject({
    id: z.string(),
    timestamp: z.iso.datetime(),
    status: z.looseObject({
      code: z.number().int().meta({ description: 'the HTTP status' }),
      errorType: z.enum([...new Set(Object.values(MESSAGES_ERROR_TYPES))] as [string, ...string[]]),
      errorDetails: z.string().meta({ description: 'human-readable message' }),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({ description: 'structured context, e.g. `issues` naming the invalid fields' }),
    }),
    requestId: z.string().optional(),
  })
  .meta({ id: 'MessagesError', description: 'Messages error reply (legacy shape)' });

/** Messages keep the legacy reply shape even when they fail: `status: {code, errorType, errorDetails}`. */
export function sendMessagesError(
  res: Response,
  err: unknown,
  requestId: string | undefined,
  logger: Logger,
) {
  const envelope = envelopeOf(err, requestId);
  const appError = toAppError(err);
  if (envelope.status >= 500) logger.error({ err }, 'message failed');
  if (envelope.retryAfter !== undefined) res.setHeader('retry-after', String(envelope.retryAfter));
  res.status(envelope.status).json({
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    status: {
      code: envelope.status,
      errorType: MESSAGES_ERROR_TYPES[appError?.kind ?? 'internal'],
      errorDetails: envelope.message,
      ...(envelope.details ? { details: envelope.details } : {}),
    },
    requestId,
  });
}

const MESSAGES_PATH = /^\/v1\/messages\/?$/i;

/**
 * What every message goes through before its body is looked at (decision 0112): the client token, then the
 * page's origin (403 before anything is spent), then a point of the address's budget; CORS headers set for an
 * allowed page, so it can read whatever follows (a 429 too).
 */
async function admit(
  { assistants, messageLimits }: LegacyDomain,
  req: Request,
  res: Response,
): Promise<AssistantDoc> {
  const assistant = await assistants.byClientToken(bearerToken(req));
  allowOrigin(req, res, assistant);
  await messageLimits.admitAddress(assistant._id, forwardedViewOf(req).clientAddress);
  return assistant;
}

/**
 * Parses the body of `/v1/Messages` before the app's own parser, so a malformed or oversized body is
 * answered in the Messages shape rather than the platform envelope; after the checks every message goes through
 * first (a malformed body is still a request: it costs a point, and a refused page learns only that it is refused).
 */
export function messagesBodyParser(domain: LegacyDomain, limit: number, logger: Logger): RequestHandler {
  const json = express.json({
    limit,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: markSuspectJson,
  });
  return (req, res, next) => {
    if (req.method !== 'POST' || !MESSAGES_PATH.test(req.path)) return next();
    json(req, res, (err?: unknown) => {
      const refused = err ?? suspectJsonRefusal(req);
      // checked: the app's own guard need not walk it again
      if (!refused) {
        delete (req as { suspectJson?: unknown }).suspectJson;
        return next();
      }
      admit(domain, req, res)
        .then(
          () => sendMessagesError(res, refused, req.id, logger),
          (first: unknown) => sendMessagesError(res, first, req.id, logger),
        )
        .catch(next);
    });
  };
}

/** Spec 4.4: `POST /v1/Messages` with the client token. */
export function mountMessageRoutes(router: Router, domain: LegacyDomain): void {
  const { dialogue, messageLimits, ctx } = domain;
  router.post('/v1/Messages', async (req, res) => {
    try {
      const assistant = await admit(domain, req, res);
      const input = parseInput(messageBody, jsonBody(req) ?? {});
      await messageLimits.admitUser(assistant._id, input.userId);
      res.json(await dialogue.reply(assistant, input));
    } catch (err) {
      sendMessagesError(res, err, req.id, ctx.logger);
    }
  });
  // Another method is refused in the Messages shape too (with Allow), not in the platform envelope.
  router.all('/v1/Messages', (req, res, next) => {
    if (req.method === 'OPTIONS') return next(); // the router's own answer, or CORS's
    res.setHeader('allow', 'POST');
    sendMessagesError(res, new MethodNotAllowed(req.method, ['POST']), req.id, ctx.logger);
  });
}
