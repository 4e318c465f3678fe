/**
 * What the gateway benchmarks give the platform: a gateway file naming the simulators (`sim/gpt` on
 * `sim`, and `sim/stream` on `simstream` when given), llm-quota plans whose limits the load never
 * reaches, and a caller: a user with an organization, as its session JWT.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const BIG = 1_000_000_000_000;

/** The platform's environment for `dataDir` (its gateway file is written there). */
export function benchPlatformEnv(
  dataDir: string,
  simulators: { sim: string; simstream?: string },
): NodeJS.ProcessEnv {
  const file = path.join(dataDir, 'gateway.json');
  const model = (id: string, provider: string) => ({
    model_id: id,
    type: 'completion',
    provider_config: { provider, model: 'gpt-sim' },
    pricing: { input_per_million: 2, output_per_million: 8 },
    parameters_billion: 8,
  });
  const providers = Object.entries(simulators).map(([name, url]) => ({
    name,
    type: 'openai',
    baseUrl: `${url}/v1`,
    apiKey: 'sk-bench',
  }));
  writeFileSync(
    file,
    JSON.stringify({
      providers,
      models: [model('sim/gpt', 'sim'), ...(simulators.simstream ? [model('sim/stream', 'simstream')] : [])],
    }),
  );
  return {
    ...process.env,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    LLM_GATEWAY_CONFIG: file,
    LLM_QUOTA_PLANS: JSON.stringify({
      bench: {
        limits: { 'llm.rpm': BIG, 'llm.tpm': BIG, 'llm.monthly_tokens': BIG, 'llm.monthly_cost': BIG },
        per_user_defaults: { rpm: BIG, tpm: BIG },
      },
    }),
    LLM_QUOTA_DEFAULT_PLAN: 'bench',
  };
}

/** An anonymous user who creates the organization `bench-gw`: its session JWT. */
export async function benchCaller(baseUrl: string): Promise<string> {
  const login = await fetch(`${baseUrl}/v2/login/anonymous`, { method: 'POST' });
  const { token } = (await login.json()) as { token: string };
  const org = await fetch(`${baseUrl}/v2/orgs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'bench-gw', name: 'Bench' }),
  });
  if (org.status !== 201) throw new Error(`org: ${org.status}`);
  return token;
}
