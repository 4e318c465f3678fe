import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { InvalidInput } from '../errors';

/**
 * Two refusals of a parsed JSON body, both cheap where it matters: the parser's `verify` marks a body only when its
 * bytes could hold what is refused, and only marked bodies are walked (without recursion), so the hot paths' are not.
 *
 * - A key named `__proto__` (Fastify's default, secure-json-parse): JSON.parse makes it an own member, which zod's
 *   records drop without a word and any merge would turn into the object's prototype. Suspect: the bytes name
 *   `__proto__` or hold a `\u` escape (which could spell it).
 * - Nesting deeper than `MAX_JSON_DEPTH`: JSON.parse reads a body nested 100,000 deep, but JSON.stringify (sending
 *   it on, writing it to the store, logging it) or any recursive walk overflows the stack at a few thousand levels.
 *   Suspect: more than `MAX_JSON_DEPTH` `{` and `[` bytes, the least such a body holds.
 *
 * Bytes tell only in UTF-8: the parser takes every `utf-*` charset, and UTF-16 or UTF-32 put zero bytes between the
 * letters of `__proto__`, UTF-7 spells `[[[` as `+AFsAWwBb-`. A body in another charset (rare) is walked for both.
 */

/** Far deeper than any request of the platform's APIs (a tool's JSON schema, content parts), far shallower than the stack. */
export const MAX_JSON_DEPTH = 128;

interface Marked {
  suspectJson?: { protoKey: boolean; deep: boolean };
  body?: unknown;
}

const PROTO_SUSPECT = ['__proto__', '\\u'];
const OPENERS = ['{'.charCodeAt(0), '['.charCodeAt(0)];

/** Whether `raw` holds more than `MAX_JSON_DEPTH` `{` and `[` bytes (counted until there are). */
function mayNestTooDeep(raw: Buffer): boolean {
  // each level opens and closes
  if (raw.length < 2 * (MAX_JSON_DEPTH + 1)) return false;
  let count = 0;
  for (const opener of OPENERS) {
    for (let at = raw.indexOf(opener); at !== -1; at = raw.indexOf(opener, at + 1))
      if (++count > MAX_JSON_DEPTH) return true;
  }
  return false;
}

/** body-parser's `verify`: marks the bodies that need a walk, and which (`charset`: the one the body is read in). */
export function markSuspectJson(req: IncomingMessage, _res: unknown, raw: Buffer, charset = 'utf-8'): void {
  const notUtf8 = charset.toLowerCase() !== 'utf-8';
  const protoKey = notUtf8 || PROTO_SUSPECT.some((s) => raw.includes(s));
  const deep = notUtf8 || mayNestTooDeep(raw);
  if (protoKey || deep) (req as Marked).suspectJson = { protoKey, deep };
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

/** An object or array being read: its members' keys (none for an array) and the next one to read. */
interface Frame {
  node: object;
  keys: string[] | null;
  next: number;
}

/**
 * The path of the first value of a parsed JSON value nested more than `max` levels deep (objects and arrays alike),
 * or null. Read depth first with a frame a level, so it holds no more than `max` frames however wide the value.
 */
export function tooDeepPath(value: unknown, max = MAX_JSON_DEPTH): string | null {
  const frames: Frame[] = [];
  const enter = (node: unknown) => {
    if (typeof node === 'object' && node !== null)
      frames.push({ node, keys: Array.isArray(node) ? null : Object.keys(node), next: 0 });
  };
  const at = ({ keys, next }: Frame) => (keys ? keys[next - 1]! : String(next - 1));
  enter(value);
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    const { node, keys } = frame;
    if (frame.next === (keys ?? (node as unknown[])).length) {
      frames.pop();
      continue;
    }
    const child: unknown = keys
      ? (node as Record<string, unknown>)[keys[frame.next]!]
      : (node as unknown[])[frame.next];
    frame.next += 1;
    if (frames.length === max && typeof child === 'object' && child !== null) return frames.map(at).join('.');
    enter(child);
  }
  return null;
}

/** 400 INVALID_BODY with its one issue at `field`. */
const refusal = (field: string, issue: string, message: string) =>
  new InvalidInput(`Invalid body: ${message}`, {
    code: 'INVALID_BODY',
    details: { issues: [{ field, message: issue }] },
  });

/** The refusal of a marked, parsed body nested too deep or holding a `__proto__` key (naming where), or null. */
export function suspectJsonRefusal(req: Marked): InvalidInput | null {
  const { suspectJson } = req;
  if (!suspectJson) return null;
  // depth first: a body nested too deep is refused for that, whatever else it holds
  const tooDeep = suspectJson.deep ? tooDeepPath(req.body) : null;
  if (tooDeep !== null) {
    const issue = `nested more than ${MAX_JSON_DEPTH} levels deep`;
    // the issue's field names where: it is as long as the bound, too long to repeat in the message
    return refusal(tooDeep, issue, issue);
  }
  const at = suspectJson.protoKey ? protoKeyPath(req.body) : null;
  if (at === null) return null;
  const issue = 'a key named __proto__ is not accepted';
  return refusal(at, issue, `${at}: ${issue}`);
}

/** After the JSON parser: a marked body nested too deep or holding a `__proto__` key is a 400 naming where. */
export const refuseSuspectJson: RequestHandler = (req, _res, next) => {
  next(suspectJsonRefusal(req as Marked) ?? undefined);
};
