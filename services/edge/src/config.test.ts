import { ConfigError, loadConfig } from '@platform/kernel';
import { edgeConfigSchema } from './config';

const base = {
  AUTH_URL: 'http://127.0.0.1:1',
  LLM_QUOTA_URL: 'http://127.0.0.1:2',
  LLM_GATEWAY_URL: 'http://127.0.0.1:3',
  LEGACY_AGENT_URL: 'http://127.0.0.1:4',
  PLATFORM_INTERNAL_SECRET: 'x'.repeat(32),
};

describe('host-mapped roots in the configuration (GATEWAY_HOSTS, LEGACY_HOSTS)', () => {
  it('take host names as a request names them: any case, a final dot or none', () => {
    const config = loadConfig(edgeConfigSchema, {
      ...base,
      GATEWAY_HOSTS: ' LLM.Example.com. , gw.example.com',
      LEGACY_HOSTS: 'legacy.example.com.,[::1]',
    });
    expect(config.GATEWAY_HOSTS).toEqual(['llm.example.com', 'gw.example.com']);
    expect(config.LEGACY_HOSTS).toEqual(['legacy.example.com', '[::1]']);
  });

  it.each([
    ['a port', 'legacy.example.com:8443'],
    ['a scheme', 'https://legacy.example.com'],
    ['a path', 'legacy.example.com/v1'],
    ['a space', 'legacy example.com'],
  ])('refuse a host written with %s, which no request would ever match, naming the key', (_, value) => {
    expect(() => loadConfig(edgeConfigSchema, { ...base, LEGACY_HOSTS: value })).toThrow(ConfigError);
    expect(() => loadConfig(edgeConfigSchema, { ...base, LEGACY_HOSTS: value })).toThrow(/LEGACY_HOSTS/);
  });
});
