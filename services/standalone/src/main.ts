import { ConfigError, createLogger, handleProcessSignals } from '@platform/kernel';
import { startPlatform } from './platform';

/** `pnpm start`: the whole platform in one process, on embedded defaults unless told otherwise. */
async function main() {
  const logger = createLogger({ name: 'platform', level: process.env.LOG_LEVEL ?? 'info' });
  try {
    const platform = await startPlatform({ env: process.env, logger });
    logger.info(
      { base_url: platform.baseUrl, gateway_url: platform.gatewayUrl, legacy_url: platform.legacyUrl },
      'platform ready',
    );
    console.log(
      `\nPlatform ready:\n  {base_url}    ${platform.baseUrl}\n  {gateway_url} ${platform.gatewayUrl}\n  {legacy_url}  ${platform.legacyUrl}\n`,
    );
    handleProcessSignals(logger, platform.stop);
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
