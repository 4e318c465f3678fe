import { expectedReadmes } from './config-tables';

/** The READMEs' configuration tables say what the schemas say: a key added, removed or re-described fails here. */
describe('configuration tables in the READMEs', () => {
  it.each(expectedReadmes().map((r) => [r.file, r] as const))('%s matches the schemas', (_file, readme) => {
    expect(readme.current).toBe(readme.text);
  });

  it('document LEGACY_TRAINING_NICE', () => {
    const legacy = expectedReadmes().find((r) => r.file === 'services/legacy-agent/README.md')!;
    expect(legacy.current).toMatch(/\| `LEGACY_TRAINING_NICE` +\| how much lower/);
  });
});
