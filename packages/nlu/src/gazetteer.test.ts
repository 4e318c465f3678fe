import { Gazetteer } from './gazetteer';
import { tokenize } from './tokenize';

const phrase = (entity: number, value: string, text = value) => ({
  entity,
  value,
  tokens: tokenize(text).map((t) => t.norm),
});

describe('Gazetteer', () => {
  const g = new Gazetteer(
    [
      phrase(0, 'Garching'),
      phrase(0, 'Garching Forschungszentrum'),
      phrase(1, 'pizza'),
      phrase(1, 'pizza', 'pizzas'),
      phrase(2, 'Garching'),
    ],
    [true, false, true],
  );

  it('matches whole words, case- and accent-insensitively, longest phrase first', () => {
    const m = g.match(tokenize('From GARCHING Forschungszentrum to garching'));
    expect(m.map((x) => [x.start, x.end])).toEqual([
      [1, 3],
      [4, 5],
    ]);
    expect(m[1]!.candidates.map((c) => c.entity)).toEqual([0, 2]);
    expect(g.match(tokenize('garchingerstrasse'))).toEqual([]);
  });

  it('accepts misspellings only for extensible entities', () => {
    expect(g.match(tokenize('garchnig'))[0]!.candidates).toEqual([
      { entity: 0, value: 'Garching', key: 'garching', edits: 1 },
      { entity: 2, value: 'Garching', key: 'garching', edits: 1 },
    ]);
    expect(g.match(tokenize('pizzza'))).toEqual([]);
    expect(g.match(tokenize('pizzas'))[0]!.candidates[0]!.value).toBe('pizza');
  });
});
