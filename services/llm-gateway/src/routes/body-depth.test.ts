import { MAX_BODY_DEPTH, nestedDeeperThan } from './body-depth';

const nested = (levels: number, inner: unknown = 1): unknown => {
  let value = inner;
  for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? [value] : { member: value };
  return value;
};

describe('nestedDeeperThan', () => {
  it('counts arrays and objects alike, up to the bound and one past it', () => {
    expect(nestedDeeperThan(nested(MAX_BODY_DEPTH), MAX_BODY_DEPTH)).toBe(false);
    expect(nestedDeeperThan(nested(MAX_BODY_DEPTH + 1), MAX_BODY_DEPTH)).toBe(true);
    // the deepest branch counts, wherever it is
    expect(nestedDeeperThan({ a: 1, b: [nested(3)], c: nested(MAX_BODY_DEPTH) }, MAX_BODY_DEPTH)).toBe(true);
  });

  it('reads a body nested far deeper than the stack allows without overflowing it', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(nestedDeeperThan(deep, MAX_BODY_DEPTH)).toBe(true);
  });
});
