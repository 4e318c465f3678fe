import type { IncomingMessage } from 'node:http';
import { MAX_JSON_DEPTH, markSuspectJson, suspectJsonRefusal, tooDeepPath } from './json-body-guards';

const nested = (levels: number, inner: unknown = 1): unknown => {
  let value = inner;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? [value] : { member: value };
  return value;
};

/** What the parser's `verify` makes of `raw`, and the refusal of the body it parses to. */
const guarded = (raw: string) => {
  const req = {} as IncomingMessage & Parameters<typeof suspectJsonRefusal>[0];
  markSuspectJson(req, undefined, Buffer.from(raw));
  req.body = JSON.parse(raw);
  return { marked: req.suspectJson, refusal: suspectJsonRefusal(req) };
};

describe('tooDeepPath', () => {
  it('counts arrays and objects alike, up to the bound and one past it, naming where', () => {
    expect(tooDeepPath(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(tooDeepPath(nested(MAX_JSON_DEPTH + 1))).toBe(
      Array(MAX_JSON_DEPTH / 2)
        .fill('0.member')
        .join('.'),
    );
    expect(tooDeepPath({ a: { b: [[1]] } }, 3)).toBe('a.b.0');
    // the deepest branch counts, wherever it is
    expect(tooDeepPath({ a: 1, b: [nested(3)], c: nested(MAX_JSON_DEPTH) })).toMatch(/^c\./);
  });

  it('reads a body nested far deeper than the stack allows without overflowing it', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(tooDeepPath(deep)).toBe(Array(MAX_JSON_DEPTH).fill('0').join('.'));
  });
});

describe('markSuspectJson', () => {
  it('marks for the depth walk only a body holding more than 128 `{` and `[` bytes', () => {
    const brackets = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(guarded(brackets(MAX_JSON_DEPTH)).marked).toBeUndefined();
    expect(guarded(`{"a":[${'{},'.repeat(200)}{}]}`).marked).toEqual({ protoKey: false, deep: true });
    expect(guarded(`{"a":[${'{},'.repeat(200)}{}]}`).refusal).toBeNull();
    const refused = guarded(brackets(MAX_JSON_DEPTH + 1));
    expect(refused.marked).toEqual({ protoKey: false, deep: true });
    expect(refused.refusal?.details).toEqual({
      issues: [
        { field: Array(MAX_JSON_DEPTH).fill('0').join('.'), message: 'nested more than 128 levels deep' },
      ],
    });
  });

  it('marks for the __proto__ walk a body naming it or holding an escape; a deep one is refused for its depth', () => {
    expect(guarded('{"a":"caf\\u00e9"}')).toEqual({ marked: { protoKey: true, deep: false }, refusal: null });
    expect(guarded('{"a":{"__proto__":1}}').refusal?.message).toBe(
      'Invalid body: a.__proto__: a key named __proto__ is not accepted',
    );
    const both = guarded(`{"__proto__":1,"x":${'['.repeat(200)}${']'.repeat(200)}}`);
    expect(both.refusal?.message).toBe('Invalid body: nested more than 128 levels deep');
  });

  it('marks for both walks a body in another charset than UTF-8, whose bytes do not tell', () => {
    const req = {} as IncomingMessage & Parameters<typeof suspectJsonRefusal>[0];
    markSuspectJson(req, undefined, Buffer.from('{"a":1}', 'utf16le'), 'utf-16le');
    expect(req.suspectJson).toEqual({ protoKey: true, deep: true });
    const utf8 = {} as IncomingMessage & Parameters<typeof suspectJsonRefusal>[0];
    markSuspectJson(utf8, undefined, Buffer.from('{"a":1}'), 'UTF-8');
    expect(utf8.suspectJson).toBeUndefined();
  });
});
