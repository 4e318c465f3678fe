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
  protoKeyRefusal,
  toAppError,
} from '@platform/kernel';
import express, { type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { LegacyDomain } from '../domain';
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
 * Parses the body of `/v1/Messages` before the app's own parser, so a malformed or oversized body is
 * answered in the Messages shape rather than the platform envelope.
 */
export function messagesBodyParser(limit: number, logger: Logger): RequestHandler {
  const json = express.json({
    limit,
    strict: true,
    type: ['application/json', 'application/*+json'],
    verify: markSuspectJson,
  });
  return (req, res, next) => {
    if (req.method !== 'POST' || !MESSAGES_PATH.test(req.path)) return next();
    json(req, res, (err?: unknown) => {
      const refused = err ?? protoKeyRefusal(req);
      return refused ? sendMessagesError(res, refused, req.id, logger) : next();
    });
  };
}

/** Spec 4.4: `POST /v1/Messages` with the client token. */
export function mountMessageRoutes(
  router: Router,
  { assistants, dialogue, messageLimits, ctx }: LegacyDomain,
): void {
  router.post('/v1/Messages', async (req, res) => {
    try {
      const assistant = await assistants.byClientToken(bearerToken(req));
      // CORS headers first: a browser page must be able to read a 429 too
      allowOrigin(req, res, assistant);
      // a point before the body is looked at, as login's throttle (decision 0112)
      await messageLimits.admitAddress(assistant._id, forwardedViewOf(req).clientAddress);
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
