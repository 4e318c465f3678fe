import { Gazetteer, valueAsTyped } from './gazetteer';
import type { Steps } from './steps';
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

describe('valueAsTyped', () => {
  const spelt = (...spellings: Array<[value: string, text: string]>) => ({
    entity: 0,
    value: spellings[0]![0],
    key: '',
    spellings: spellings.map(([value, text]) => ({ value, text })),
  });

  it('resolves values that fold alike by their spelling as typed, else ignoring case only, else the first listed', () => {
    const city = spelt(
      ['Paris', 'Paris'],
      ['paris', 'paris'],
      ['Zurich', 'Zurich'],
      ['Zürich', 'Z\u00fcrich'],
    );
    expect(valueAsTyped(city, 'paris')).toBe('paris');
    expect(valueAsTyped(city, 'Paris')).toBe('Paris');
    expect(valueAsTyped(city, 'PARIS')).toBe('Paris');
    expect(valueAsTyped(city, 'pAriss')).toBe('Paris');
    // in any Unicode form
    expect(valueAsTyped(city, 'Zu\u0308rich')).toBe('Zürich');
    expect(valueAsTyped(city, 'zurich')).toBe('Zurich');
    expect(valueAsTyped(city, 'ZÜRICH')).toBe('Zürich');
    const places = spelt(
      ['garching,forschungszentrum', 'garching,forschungszentrum'],
      ['garching forschungszentrum', 'garching forschungszentrum'],
      ['strassäcker', 'straßäcker'],
      ['Strassäcker', 'strassäcker'],
    );
    expect(valueAsTyped(places, 'garching forschungszentrum')).toBe('garching forschungszentrum');
    expect(valueAsTyped(places, 'garching,forschungszentrum')).toBe('garching,forschungszentrum');
    expect(valueAsTyped(places, 'strassäcker')).toBe('Strassäcker');
    expect(valueAsTyped(places, 'Straßäcker')).toBe('strassäcker');
  });

  it('takes any run of spaces as one, and else the closest spelling ignoring case (the first listed of equals)', () => {
    const places = spelt(
      ['garching,forschungszentrum', 'garching,forschungszentrum'],
      ['garching forschungszentrum', 'garching forschungszentrum'],
    );
    expect(valueAsTyped(places, 'garching  forschungszentrum')).toBe('garching forschungszentrum');
    expect(valueAsTyped(places, 'Garching\r\n\tForschungszentrum')).toBe('garching forschungszentrum');
    expect(valueAsTyped(places, 'garching-forschungszentrum')).toBe('garching,forschungszentrum');
    const city = spelt(['Zürich', 'Zürich'], ['Zurich', 'Zurich']);
    expect(valueAsTyped(city, 'Zurichh')).toBe('Zurich');
    expect(valueAsTyped(city, 'zürih')).toBe('Zürich');
    expect(valueAsTyped(city, 'Zörich')).toBe('Zürich');
  });

  it('takes the first listed of identical spellings, and the value of an entry without spellings', () => {
    expect(
      valueAsTyped(
        spelt(['Lyon', 'capital of gastronomy'], ['Paris', 'capital of gastronomy']),
        'capital of gastronomy',
      ),
    ).toBe('Lyon');
    expect(valueAsTyped({ entity: 0, value: 'Paris', key: 'paris' }, 'paris')).toBe('Paris');
  });
});

describe('Gazetteer.build', () => {
  it('builds the same gazetteer in steps of a few phrases (a model being adopted)', () => {
    const streets = Array.from({ length: 200 }, (_, i) =>
      phrase(i % 3, `Strasse ${i}`, `Lindenstrasse ${i}`),
    );
    const steps: Steps<Gazetteer> = Gazetteer.build(streets, [true, false, true]);
    let yields = 0;
    let next = steps.next();
    for (; !next.done; next = steps.next()) yields++;
    expect(yields).toBeGreaterThanOrEqual(200 / 16);
    const whole = new Gazetteer(streets, [true, false, true]);
    for (const text of [
      'lindenstrasse 7',
      'lindenstrase 12',
      'strasse 1',
      'lindenstrasse 199 and lindenstrasse 3',
    ])
      expect(next.value.match(tokenize(text))).toEqual(whole.match(tokenize(text)));
  });
});
