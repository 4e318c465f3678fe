/**
 * Child process of the gateway benchmark: the whole platform as `pnpm start` runs it (embedded store,
 * in-process bus), its gateway file naming the simulator at SIM_URL. Creates a user and an
 * organization on a plan whose limits the benchmark never reaches, then prints `ready <token>`.
 * Usage: platform-server.ts <port> <dataDir>
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { silentLogger } from '@platform/kernel';
import { startPlatform } from '@platform/standalone';

const BIG = 1_000_000_000_000;

async function main() {
  const [port, dataDir] = process.argv.slice(2) as [string, string];
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'gateway.json');
  writeFileSync(
    file,
    JSON.stringify({
      providers: [{ name: 'sim', type: 'openai', baseUrl: `${process.env.SIM_URL}/v1`, apiKey: 'sk-bench' }],
      models: [
        {
          model_id: 'sim/gpt',
          type: 'completion',
          provider_config: { provider: 'sim', model: 'gpt-sim' },
          pricing: { input_per_million: 2, output_per_million: 8 },
          parameters_billion: 8,
        },
      ],
    }),
  );
  const platform = await startPlatform({
    env: {
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
    },
    logger: silentLogger(),
    port: Number(port),
    host: '127.0.0.1',
  });
  const login = await fetch(`${platform.baseUrl}/v2/login/anonymous`, { method: 'POST' });
  const { token } = (await login.json()) as { token: string };
  const org = await fetch(`${platform.baseUrl}/v2/orgs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ slug: 'bench-gw', name: 'Bench' }),
  });
  if (org.status !== 201) throw new Error(`org: ${org.status}`);
  console.log(`ready ${token}`);
  process.on('SIGTERM', () => platform.stop().then(() => process.exit(0)));
}

void main();
