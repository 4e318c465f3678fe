import { randomBytes } from 'node:crypto';
import { ConfigError, createLogger, handleProcessSignals } from '@platform/kernel';
import { writeOperatorHints } from './operator-hints';
import { startPlatform } from './platform';

/** `pnpm start`: the whole platform in one process, on embedded defaults unless told otherwise. */
async function main() {
  const logger = createLogger({ name: 'platform', level: process.env.LOG_LEVEL ?? 'info' });
  try {
    const env = { ...process.env };
    env.PLATFORM_INTERNAL_SECRET ??= randomBytes(32).toString('base64url');
    const platform = await startPlatform({ env, logger });
    const removeHints = writeOperatorHints(env.DATA_DIR ?? './data', {
      authUrl: platform.upstreams.auth,
      llmQuotaUrl: platform.upstreams.llmQuota,
      legacyAgentUrl: platform.upstreams.legacyAgent,
      internalSecret: env.PLATFORM_INTERNAL_SECRET,
    });
    logger.info(
      { base_url: platform.baseUrl, gateway_url: platform.gatewayUrl, legacy_url: platform.legacyUrl },
      'platform ready',
    );
    console.log(
      `\nPlatform ready:\n  {base_url}    ${platform.baseUrl}\n  {gateway_url} ${platform.gatewayUrl}\n  {legacy_url}  ${platform.legacyUrl}\n`,
    );
    handleProcessSignals(logger, async () => {
      removeHints();
      await platform.stop();
    });
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const issue of err.issues) console.error(`config error: ${issue.key}: ${issue.message}`);
      process.exit(1);
    }
    logger.fatal({ err }, 'platform failed to start');
    process.exit(1);
  }
}

void main();
