import { runSteps } from './steps';
import { StringIndex } from './string-index';

describe('StringIndex', () => {
  const words = ['w paris', 'c ari', 'b <s> book', '', 'héllo 👋', 'odd \ud800 one', 'w par'];

  it('finds every string at its position, and nothing else', () => {
    const index = StringIndex.of(words);
    expect(index.size).toBe(words.length);
    words.forEach((w, i) => {
      expect(index.get(w)).toBe(i);
    });
    for (const absent of ['w pari', 'w parisx', 'W paris', 'héllo', '\ud800'])
      expect(index.get(absent)).toBeUndefined();
    expect(index.keys()).toEqual(words);
  });

  it('holds many strings (collisions, a table grown to fit) and rebuilds from its own arrays in steps', () => {
    const many = Array.from({ length: 20_000 }, (_, i) => `f ${i.toString(36)}`);
    const index = StringIndex.of(many);
    expect(many.every((s, i) => index.get(s) === i)).toBe(true);
    const steps = StringIndex.build(index.units, index.lengths);
    let yields = 0;
    let next = steps.next();
    for (; !next.done; next = steps.next()) yields++;
    expect(yields).toBeGreaterThanOrEqual(4);
    expect(next.value.get('f 42')).toBe(many.indexOf('f 42'));
  });

  it('refuses a string listed twice, and lengths that do not match the text', () => {
    expect(() => StringIndex.of(['a', 'b', 'a'])).toThrow(/listed twice/);
    const index = StringIndex.of(['ab', 'c']);
    expect(() => runSteps(StringIndex.build(index.units, Uint32Array.from([2, 2])))).toThrow(/do not match/);
  });
});
