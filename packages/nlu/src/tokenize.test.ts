import { foldText, tokenize } from './tokenize';

describe('tokenize', () => {
  it('splits on anything but letters and digits and keeps the offsets of the input', () => {
    const text = 'Hello, wörld! u-bahn 14.04?';
    const tokens = tokenize(text);
    expect(tokens.map((t) => t.text)).toEqual(['Hello', 'wörld', 'u', 'bahn', '14.04']);
    for (const t of tokens) expect(text.slice(t.start, t.end)).toBe(t.text);
  });

  it('lower-cases and folds accents and special letters for matching', () => {
    expect(tokenize('Straße Münchner ÉTÉ Œuvre').map((t) => t.norm)).toEqual([
      'strasse',
      'munchner',
      'ete',
      'oeuvre',
    ]);
    expect(foldText('Saint-Étienne')).toBe('saint-etienne');
  });

  it('keeps decimal and time numbers whole', () => {
    expect(tokenize('at 12:30 or 3,5 km').map((t) => t.norm)).toEqual(['at', '12:30', 'or', '3,5', 'km']);
  });

  it('gives one token per character in scripts written without spaces', () => {
    expect(tokenize('東京へ行く').map((t) => t.text)).toEqual(['東', '京', 'へ', '行', 'く']);
  });

  it('handles other scripts as words', () => {
    expect(tokenize('Привет, мир').map((t) => t.norm)).toEqual(['привет', 'мир']);
    expect(tokenize('')).toEqual([]);
  });
});
