import { allowedEdits, FuzzyIndex, isFuzzyCandidate, osaDistance } from './fuzzy';

describe('osaDistance', () => {
  it('counts substitutions, insertions, deletions and adjacent transpositions as one edit', () => {
    expect(osaDistance('garching', 'garching', 2)).toBe(0);
    expect(osaDistance('garching', 'garchnig', 2)).toBe(1);
    expect(osaDistance('kieferngarten', 'kieferngarte', 2)).toBe(1);
    expect(osaDistance('paris', 'pariss', 2)).toBe(1);
    expect(osaDistance('abcdef', 'badcfe', 5)).toBe(3);
  });

  it('stops early past the bound', () => {
    expect(osaDistance('abcdefgh', 'zzzzzzzz', 2)).toBe(3);
  });
});

describe('allowedEdits', () => {
  it('tolerates nothing under 4 characters, 1 edit for 4-7, 2 from 8 on (the shorter word decides)', () => {
    expect(allowedEdits('bus', 'bas')).toBe(0);
    expect(allowedEdits('paris', 'pariss')).toBe(1);
    expect(allowedEdits('marienplatz', 'marienplaz')).toBe(2);
    expect(allowedEdits('sud', 'sued')).toBe(0);
  });
});

describe('FuzzyIndex', () => {
  const index = new FuzzyIndex(['marienplatz', 'garching', 'paris', 'bus', 'odeonsplatz', '1204']);

  it('finds the close words of the vocabulary, closest first', () => {
    expect(index.lookup('marienplaz')).toEqual([{ word: 'marienplatz', distance: 1 }]);
    expect(index.lookup('garchnig')).toEqual([{ word: 'garching', distance: 1 }]);
    expect(index.lookup('parsi')).toEqual([{ word: 'paris', distance: 1 }]);
  });

  it('never matches short words, numbers, or words too far away', () => {
    expect(index.lookup('bas')).toEqual([]);
    expect(index.lookup('1205')).toEqual([]);
    expect(index.lookup('prais')).toEqual([{ word: 'paris', distance: 1 }]);
    expect(index.lookup('pxrxs')).toEqual([]);
  });
});

describe('isFuzzyCandidate', () => {
  it('keeps approximate matching to alphabetic words of 4 to 32 letters', () => {
    expect(isFuzzyCandidate('paris')).toBe(true);
    expect(isFuzzyCandidate('bus')).toBe(false);
    expect(isFuzzyCandidate('u6')).toBe(false);
    expect(isFuzzyCandidate('a'.repeat(33))).toBe(false);
  });
});
