import { formName, formText } from './form-fields';

describe('form fields', () => {
  it('cut text without splitting a surrogate pair, and keep a password as typed', () => {
    expect(formText('ab😀', 3)).toBe('ab');
    expect(formText('ab😀', 4)).toBe('ab😀');
    expect(formText(' pass\tword ', 256)).toBe(' pass\tword ');
    expect(formText(42)).toBe('');
  });

  it('take names as text: no control characters, no lone surrogates, trimmed', () => {
    expect(formName('  Zoë\u0000\n ', 100)).toBe('Zoë');
    expect(formName('half \ud83d', 100)).toBe('half');
    expect(formName(`${'x'.repeat(99)}😀`, 100)).toBe('x'.repeat(99));
    expect(formName(undefined, 100)).toBe('');
  });

  it('drop bidirectional overrides, compose accents (NFC), and take invisible characters alone as no name', () => {
    expect(formName('Zoe\u0308\u202e', 100)).toBe('Zo\u00eb');
    expect(formName('\u2067Acme\u2069', 100)).toBe('Acme');
    expect(formName('\u200b\u200d \u3164', 100)).toBe('');
  });

  it('cut a name once composed, so that composing never makes it longer than its limit', () => {
    // U+0958 is excluded from composition: NFC makes it U+0915 U+093C, two units
    expect(formName('\u0958'.repeat(100), 100)).toBe('\u0915\u093c'.repeat(50));
    // never a letter without its marks: U+0915 alone is another letter
    expect(formName(`${'x'.repeat(98)}\u0958`, 99)).toBe('x'.repeat(98));
    expect(formName(`${'x'.repeat(97)}e\u0301\u0323`, 98)).toBe('x'.repeat(97));
    expect(formName(`${'x'.repeat(97)}e\u0301\u0323`, 99)).toBe(`${'x'.repeat(97)}\u1eb9\u0301`);
    // and a decomposed accent counts as the one unit it is stored as
    expect(formName('Zoe\u0308', 3)).toBe('Zo\u00eb');
    expect(formName(`  ${'x'.repeat(98)}😀`, 99)).toBe('x'.repeat(98));
  });
});
