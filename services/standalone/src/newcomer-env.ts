import type { Env } from './platform';

/**
 * What `pnpm start` fills in when the newcomer left it unset (its internal secret is kept in DATA_DIR:
 * `keptSecret`): an issuer (the OpenID Connect provider's and the session JWTs' `iss`) on the port they
 * chose, so that discovery at `http://localhost:<PORT>/oidc` names itself; the issuer's default otherwise says port
 * 8080. And a model server on this machine (Ollama, llama.cpp, vLLM on localhost) may be added as a provider: the
 * gateway refuses private addresses to providers an administrator adds, unless LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS
 * opens them.
 */
export function newcomerEnv(env: Env): Env {
  const filled = { ...env };
  filled.LLM_GATEWAY_PROVIDER_PRIVATE_NETWORKS ??= '127.0.0.0/8,::1';
  const port = filled.PORT;
  if (!filled.JWT_ISSUER && !filled.PUBLIC_BASE_URL && port && port !== '0' && port !== '8080')
    filled.JWT_ISSUER = `http://localhost:${port}`;
  return filled;
}
