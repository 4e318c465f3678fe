import { newcomerEnv } from './newcomer-env';

describe("pnpm start's defaults", () => {
  it('puts the issuer on the port chosen, unless an issuer or a public URL is configured', () => {
    expect(newcomerEnv({ PORT: '23080' }).JWT_ISSUER).toBe('http://localhost:23080');
    expect(newcomerEnv({}).JWT_ISSUER).toBeUndefined(); // the schema's default: localhost:8080
    expect(newcomerEnv({ PORT: '8080' }).JWT_ISSUER).toBeUndefined();
    expect(newcomerEnv({ PORT: '0' }).JWT_ISSUER).toBeUndefined();
    expect(newcomerEnv({ PORT: '9000', JWT_ISSUER: 'https://id.example.com' }).JWT_ISSUER).toBe(
      'https://id.example.com',
    );
    expect(
      newcomerEnv({ PORT: '9000', PUBLIC_BASE_URL: 'https://api.example.com' }).JWT_ISSUER,
    ).toBeUndefined();
  });

  it('lets an administrator add a model server on this machine as a provider, unless told otherwise', () => {
    expect(newcomerEnv({}).LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS).toBe('127.0.0.0/8,::1');
    expect(
      newcomerEnv({ LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS: '' }).LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS,
    ).toBe('');
  });
});
