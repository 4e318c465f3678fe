import { ConfigError, createLogger, handleProcessSignals, loadConfig } from '@platform/kernel';
import { KeptSecretError, keptSecret } from '@platform/runtime';
import { runStandaloneChild } from './child';
import { DataDirInUseError, lockDataDir } from './data-dir-lock';
import { newcomerEnv } from './newcomer-env';
import { type OperatorHints, removeOperatorHints, writeOperatorHints } from './operator-hints';
import { EdgePortUnavailableError, StartStopped, startProcessPlatform } from './process-platform';
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
  let removeHints: () => void = () => undefined;
  try {
    const env = newcomerEnv({ ...process.env });
    // as the services read it: an empty DATA_DIR is unset
    const dataDir = env.DATA_DIR || './data';
    // before any service opens its store there: one platform per data folder
    unlock = lockDataDir(dataDir);
    // the services seal with it (provider keys, developer tokens): the same at every start on this data folder
    // (DATA_DIR/internal.secret, beside auth's signing-keys.secret); an operator's own wins, and is not written there
    env.PLATFORM_INTERNAL_SECRET ||= keptSecret(dataDir, {
      file: 'internal.secret',
      what: 'internal secret',
      variable: 'PLATFORM_INTERNAL_SECRET',
    });
    // from now on it says this start's state and processes, not what a start killed before left there
    const hints: OperatorHints = {
      state: 'starting',
      internalSecret: env.PLATFORM_INTERNAL_SECRET!,
      pids: {},
      states: {},
    };
    const writeHints = (change: Partial<OperatorHints>) => {
      Object.assign(hints, change);
      try {
        writeOperatorHints(dataDir, hints);
      } catch {
        // a data folder it cannot write: each service names it, and DATA_DIR, as it opens its store
      }
    };
    writeHints({});
    removeHints = () => removeOperatorHints(dataDir);
    // a stop asked for while the services start (SIGTERM, Ctrl-C) stops those started so far, then frees DATA_DIR
    const starting = new AbortController();
    const stopStarting = (signal: NodeJS.Signals) => {
      if (starting.signal.aborted) return;
      logger.info({ signal }, 'shutting down');
      writeHints({ state: 'stopping' });
      starting.abort();
    };
    process.on('SIGTERM', stopStarting).on('SIGINT', stopStarting);
    const platform = await startProcessPlatform({
      env,
      logger,
      signal: starting.signal,
      onChange: (processes) =>
        writeHints({
          pids: Object.fromEntries(Object.entries(processes).map(([name, p]) => [name, p.pid])),
          states: Object.fromEntries(Object.entries(processes).map(([name, p]) => [name, p.state])),
        }),
    });
    // from now on a stop drains the running platform; its listeners come before the start's go, as a moment with
    // none would leave a SIGTERM (sent by whoever read the banner) to kill this process outright, services orphaned
    handleProcessSignals(logger, async () => {
      // its services stay listed until they exited: a start after this one was killed meanwhile waits for them
      writeHints({ state: 'stopping' });
      await platform.stop();
      removeHints();
      unlock();
    });
    process.off('SIGTERM', stopStarting).off('SIGINT', stopStarting);
    writeHints({
      state: 'running',
      baseUrl: platform.baseUrl,
      gatewayUrl: platform.gatewayUrl,
      authUrl: platform.upstreams.auth!,
      llmQuotaUrl: platform.upstreams['llm-quota']!,
      legacyAgentUrl: platform.upstreams['legacy-agent']!,
      admin: platform.admin,
    });
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
  } catch (err) {
    removeHints();
    unlock();
    if (err instanceof StartStopped) {
      logger.info('stopped');
      process.exit(0);
    }
    if (
      err instanceof DataDirInUseError ||
      err instanceof KeptSecretError ||
      err instanceof EdgePortUnavailableError
    ) {
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
