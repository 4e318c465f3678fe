import { z } from 'zod';
import { ConfigError, env, loadConfig } from './config';

const schema = z.object({ PORT: env.port(8080), FLAG: env.bool(false), WHEN: env.instant('2025-12-31') });

describe('loadConfig', () => {
  it('applies defaults and parses values', () => {
    const config = loadConfig(schema, { PORT: '9000', FLAG: 'true' });
    expect(config).toEqual({ PORT: 9000, FLAG: true, WHEN: new Date('2025-12-31T00:00:00Z') });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the key of a bad value', () => {
    expect(() => loadConfig(schema, { PORT: 'eighty' })).toThrow(ConfigError);
    try {
      loadConfig(schema, { PORT: '70000', WHEN: 'soon' });
    } catch (err) {
      expect((err as ConfigError).issues.map((i) => i.key).sort()).toEqual(['PORT', 'WHEN']);
    }
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig(schema, { PORT: '' }).PORT).toBe(8080);
  });
});
