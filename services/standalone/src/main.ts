import { ConfigError, createLogger, handleProcessSignals, loadConfig } from '@platform/kernel';
import { runStandaloneChild } from './child';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';
import { newcomerEnv } from './newcomer-env';
import { writeOperatorHints } from './operator-hints';
import { startProcessPlatform } from './process-platform';
import { CHILD_SERVICE_ENV } from './service-process';
import { edgeEntry } from './services';

/**
 * `pnpm start`: the whole platform on embedded defaults unless told otherwise, each service in its own
 * process. The same program is each child, told which service to be by PLATFORM_STANDALONE_SERVICE.
 */
async function main() {
  let level: string;
  try {
    // as every service reads it (an empty value is unset): a bad one is a config error, not pino's stack trace
    level = loadConfig(edgeEntry.schema.pick({ LOG_LEVEL: true })).LOG_LEVEL;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const issue of err.issues) console.error(`config error: ${issue.key}: ${issue.message}`);
    process.exit(1);
  }
  const logger = createLogger({ name: 'standalone', level });
  let unlock: () => void = () => undefined;
  try {
    const env = newcomerEnv({ ...process.env });
    // as the services read it: an empty DATA_DIR is unset
    const dataDir = env.DATA_DIR || './data';
    // before any service opens its store there: one platform per data folder
    unlock = lockDataDir(dataDir);
    let removeHints: () => void = () => undefined;
    const writeHints = () => {
      removeHints = writeOperatorHints(dataDir, {
        baseUrl: platform.baseUrl,
        gatewayUrl: platform.gatewayUrl,
        authUrl: platform.upstreams.auth!,
        llmQuotaUrl: platform.upstreams['llm-quota']!,
        legacyAgentUrl: platform.upstreams['legacy-agent']!,
        internalSecret: env.PLATFORM_INTERNAL_SECRET!,
        admin: platform.admin,
        pids: platform.pids(),
      });
    };
    const platform = await startProcessPlatform({ env, logger, onRestart: () => writeHints() });
    writeHints();
    const roots = {
      base_url: platform.baseUrl,
      gateway_url: platform.gatewayUrl,
      legacy_url: platform.legacyUrl,
    };
    logger.info({ ...roots, admin: platform.admin }, 'platform ready');
    // for people: stderr, so stdout stays one JSON log line per line
    console.error(
      `\nPlatform ready:\n  {base_url}    ${roots.base_url}\n  {gateway_url} ${roots.gateway_url}\n  {legacy_url}  ${roots.legacy_url}\n`,
    );
    handleProcessSignals(logger, async () => {
      removeHints();
      await platform.stop();
      unlock();
    });
  } catch (err) {
    unlock();
    if (err instanceof DataDirInUseError) {
      console.error(`cannot start: ${err.message}`);
      process.exit(1);
    }
    if (err instanceof ConfigError) {
      for (const issue of err.issues) console.error(`config error: ${issue.key}: ${issue.message}`);
      process.exit(1);
    }
    logger.fatal({ err }, 'platform failed to start');
    process.exit(1);
  }
}

const childService = process.env[CHILD_SERVICE_ENV];
if (childService) runStandaloneChild(childService);
else void main();
