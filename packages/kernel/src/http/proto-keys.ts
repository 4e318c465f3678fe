import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { InvalidInput } from '../errors';

/**
 * JSON bodies may not hold a key named `__proto__` (Fastify's default, secure-json-parse). JSON.parse makes it an
 * own member, which zod's records drop without a word and any merge would turn into the object's prototype.
 * Cheap where it matters: a body is walked only when its bytes name `__proto__` or hold a `\u` escape (which could
 * spell it), so the hot paths' bodies are not.
 */
const SUSPECT = ['__proto__', '\\u'];

/** body-parser's `verify`: marks the bodies that need the walk. */
export function markSuspectJson(req: IncomingMessage, _res: unknown, raw: Buffer): void {
  if (SUSPECT.some((s) => raw.includes(s))) (req as { suspectJson?: boolean }).suspectJson = true;
}

/** The path of the first own `__proto__` key in a parsed JSON value, or null. */
export function protoKeyPath(value: unknown): string | null {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [node, path] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (Object.hasOwn(node, '__proto__')) return path ? `${path}.__proto__` : '__proto__';
    for (const [key, child] of Object.entries(node)) stack.push([child, path ? `${path}.${key}` : key]);
  }
  return null;
}

/** The refusal of a marked, parsed body holding a `__proto__` key (naming where), or null. */
export function protoKeyRefusal(req: { suspectJson?: boolean; body?: unknown }): InvalidInput | null {
  if (!req.suspectJson) return null;
  const at = protoKeyPath(req.body);
  return at === null
    ? null
    : new InvalidInput(`Invalid body: ${at}: a key named __proto__ is not accepted`, {
        code: 'INVALID_BODY',
        details: { issues: [{ field: at, message: 'a key named __proto__ is not accepted' }] },
      });
}

/** After the JSON parser: a marked body holding a `__proto__` key is a 400 naming where. */
export const refuseProtoKeys: RequestHandler = (req, _res, next) => {
  const refusal = protoKeyRefusal(req as { suspectJson?: boolean; body?: unknown });
  next(refusal ?? undefined);
};
