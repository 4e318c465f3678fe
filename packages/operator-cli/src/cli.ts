import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  baseUrl,
  CannotReach,
  CliError,
  type CliSettings,
  MissingSetting,
  NoOperatorToken,
  NoServiceUrl,
} from './client';
import {
  addMember,
  addOidcClient,
  addSsoProvider,
  assignPlan,
  createOrg,
  issueOrgApiKey,
  listKeys,
  type Outcome,
  revokeKey,
  rotateKeys,
} from './commands';
import { allowModels, setDowngrade, setOrgDefault } from './governance-commands';
import {
  addProvider,
  exportModels,
  grantPlatformAdmin,
  importModels,
  listProviders,
  removeProvider,
  setModelEnabled,
  testProvider,
} from './llm-commands';

export const HELP = `Usage: pnpm platform <command> [options]

Operator commands. Each is idempotent: running it again reports what exists instead of failing.

  org create <slug> [--name NAME]              create an organization (the operator becomes its owner)
  member add <org> <userId> [--role ROLE]      add a member (role: member), or change its role to ROLE; run
                                               again without --role, it keeps the role the member has
  plan assign <org> <plan>                     assign an LLM plan to an organization
  apikey issue <org> --name NAME [--permission P]... [--scope S]... [--project ID]
                                               issue an organization API key (shown once)
  keys rotate                                  rotate the signing keys now (published before it signs)
  keys list                                    the signing keys: kid, state, created/activated/retired/revoked
  keys revoke <kid>                            a leaked key: it verifies and signs nothing from now on (a new
                                               key signs at once if it was signing; sessions refresh)
  oidc-client add <clientId> [--redirect-uri URI]...
                  [--post-logout-redirect-uri URI... | --no-post-logout-redirect-uri]
                  [--name NAME] [--confidential | --public] [--rotate-secret]
                                               register an OpenID Connect client (public, PKCE, unless
                                               --confidential: then its secret is shown once; a new one
                                               needs a --redirect-uri); run again, it keeps its redirect
                                               URIs, name, secret and logout redirect URIs unless given
                                               (--public: the secret is dropped, and a new one made once
                                               --confidential is given again; --rotate-secret: a leaked
                                               secret is replaced, the new one shown once, the old one
                                               refused at once; --no-post-logout-redirect-uri: none)
  sso add <slug> --issuer URL --client-id ID [--client-secret S | --client-secret-file FILE | --no-client-secret]
          [--name NAME] [--org ORG | --no-org]
                                               name an external OpenID Connect identity provider
                                               (with --org: a company's, whose users join ORG); run
                                               again, it keeps the stored secret and organization unless
                                               given or removed (--no-client-secret: a public client;
                                               --no-org: the platform's provider); it says what became of both
  admin grant|revoke <userId>                  make a user a platform administrator (or not)

LLM gateway (a platform administrator's token):
  providers add <name> --type openai|anthropic|mock [--base-url URL] [--api-key KEY | --api-key-file FILE |
                --no-api-key] [--header NAME=VALUE]... [--no-headers] [--azure-api-version V]
                                               add or replace a provider; its stored key and headers, never
                                               shown, are given again or removed (--no-api-key; --no-headers:
                                               those not given with --header): else nothing is changed
  providers list                               the providers (keys are never shown)
  providers remove <name>                      remove a provider no model uses
  providers test <name> --org ORG              smoke-test each model of a provider, as ORG (past the gateway's
                                               20 smoke tests a minute, it waits for the next minute)
  models import <file>                         replace the whole catalogue (JSON/YAML, {models: [...]})
  models export [--out FILE]                   the catalogue, as \`models import\` takes it
  models enable|disable <modelId>              turn a model on or off
  org allow <org> <modelId>... | --all         the models an organization may use (--all: every one)
  org default <org> completions|embeddings <modelId|none>
  org downgrade <org> <fromModel> <toModel|none>   soft_downgrade mapping

  A secret (--api-key, --client-secret) given on the command line shows in \`ps\` and the shell's history: its
  --…-file option reads it from a file instead (its last newline dropped), /dev/stdin from a pipe.

Connection (flags win over the environment):
  --url URL            the edge's base URL           PLATFORM_URL   (default http://localhost:8080)
                       for org create, member add, apikey issue and the LLM gateway commands
  --gateway-url URL    the edge's gateway root       PLATFORM_GATEWAY_URL (default {url}/llm)
                       for the LLM gateway commands
  --token TOKEN        operator session JWT or at:   PLATFORM_TOKEN
                       for org create, member add, apikey issue and the LLM gateway commands
  --auth-url URL       auth                          AUTH_URL
                       for plan assign, keys, oidc-client add, sso add, admin grant|revoke
  --llm-quota-url URL  llm-quota                     LLM_QUOTA_URL
                       for plan assign
                       the shared internal secret    PLATFORM_INTERNAL_SECRET
                       for plan assign, keys, oidc-client add, sso add, admin grant|revoke
  Against a local \`pnpm start\`, all but the token are read from DATA_DIR/standalone.json.

  --timeout SECONDS    how long one call may take    PLATFORM_TIMEOUT (default 60)
                       (a smoke test: its model's timeout_ms, else 60 s, more)
  --json               print the outcome as JSON, a failure too: {"result":"failed","exitCode":N,"error":"..."}
                       (and "data": each model's result, of a providers test that failed)
  -h, --help           this text
`;

/** where the edge is looked for when nothing names it: a local pnpm start on its default PORT */
const DEFAULT_URL = 'http://localhost:8080';

/** where an operator gets a token, for the edge at `url` (README, "Other tokens" and "A first platform administrator") */
const howToGetAToken = (url: string) =>
  `Get one: sign in with POST ${url}/v2/login ({"email", "password"}: the answer's .token), or for a script make an at: token with POST ${url}/v2/user/accessTokens; providers and models need a platform administrator's (pnpm platform admin grant <userId>).`;

/** the data folder of the pnpm start the CLI looks for, as the services read DATA_DIR (empty: unset) */
const dataDirOf = (env: Record<string, string | undefined>) => env.DATA_DIR || './data';

const alive = (pid: number) => {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process of another user holds that id
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** this boot of this host (Linux), as pnpm start writes it in its lock */
const thisBoot = () => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
};

/**
 * The process id, host and boot in DATA_DIR/standalone.lock (no host, no boot in the formats before they were
 * recorded); null without the file (a pnpm start from before it wrote one).
 */
function lockHolder(dir: string): { pid: number; host?: string; boot?: string } | null {
  try {
    const [pid, host, boot] = readFileSync(path.resolve(dir, 'standalone.lock'), 'utf8').split('\n');
    return {
      pid: Number.parseInt(pid ?? '', 10),
      host: host?.trim() || undefined,
      boot: boot?.trim() || undefined,
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Reads what a local standalone platform wrote about itself (its URLs and secret), while it runs: the file of one
 * killed with SIGKILL stays behind, naming ports nothing listens on, so it counts only while the process holding
 * DATA_DIR/standalone.lock is alive, and of this boot. A file without a lock beside it is that of a pnpm start older
 * than the lock (still running its old code after an update), read as it was then. One still starting or already
 * stopping gives a note, which a failed command then shows; so does one of another host (a shared volume), whose
 * services listen on that host's loopback: the secret is never sent to what listens on these ports here.
 */
function standaloneHints(env: Record<string, string | undefined>): Partial<CliSettings> & { note?: string } {
  const dir = dataDirOf(env);
  try {
    const holder = lockHolder(dir);
    if (holder?.host && holder.host !== hostname())
      return {
        note: `The pnpm start on ${dir} runs on host ${holder.host}, its services on that host's loopback: name them (--url, --auth-url, --llm-quota-url) to reach them from here.`,
      };
    if (holder !== null && !alive(holder.pid)) return {};
    // of an earlier boot: that process id is another program's now
    if (holder?.boot && holder.boot !== (thisBoot() ?? holder.boot)) return {};
    const hints = JSON.parse(readFileSync(path.resolve(dir, 'standalone.json'), 'utf8')) as Record<
      string,
      string
    >;
    if (hints.state === 'starting')
      return {
        note: `The pnpm start on ${dir} is still starting: run this again once it prints "Platform ready".`,
      };
    if (hints.state === 'stopping') return { note: `The pnpm start on ${dir} is stopping.` };
    return {
      url: hints.baseUrl,
      gatewayUrl: hints.gatewayUrl,
      authUrl: hints.authUrl,
      llmQuotaUrl: hints.llmQuotaUrl,
      internalSecret: hints.internalSecret,
    };
  } catch {
    return {};
  }
}

/** Runs one command; answers the process exit code (0 done or already there, 1 failed, 2 usage). */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  io: Io,
): Promise<number> {
  // with --json, a failure is JSON on stdout too, so that a script reads every outcome the same way
  const failed = (message: string, exitCode: number, data?: unknown) => {
    if (argv.includes('--json'))
      io.out(
        JSON.stringify({
          result: 'failed',
          exitCode,
          error: message,
          ...(data === undefined ? {} : { data }),
        }),
      );
    return exitCode;
  };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${HELP}`);
    return failed((err as Error).message, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  if (positionals.length === 0) {
    io.err(HELP);
    return failed('No command given (pnpm platform --help lists them)', 2);
  }
  const hints = standaloneHints(env);
  // each URL with where it came from, so a bad one is named as the operator wrote it
  const from = (
    flag: 'url' | 'gateway-url' | 'auth-url' | 'llm-quota-url',
    variable: string,
    hint?: string,
  ) => {
    if (values[flag] !== undefined) return baseUrl(values[flag], `--${flag}`);
    if (env[variable]) return baseUrl(env[variable], variable);
    return baseUrl(hint, 'DATA_DIR/standalone.json');
  };
  let settings: CliSettings | undefined;
  try {
    // the local platform's edge (its PORT, its GATEWAY_PATH_PREFIX) unless another one is named
    const url = from('url', 'PLATFORM_URL');
    settings = {
      url: url ?? from('url', 'PLATFORM_URL', hints.url) ?? DEFAULT_URL,
      gatewayUrl: from('gateway-url', 'PLATFORM_GATEWAY_URL', url ? undefined : hints.gatewayUrl),
      token: values.token || env.PLATFORM_TOKEN || undefined,
      authUrl: from('auth-url', 'AUTH_URL', hints.authUrl),
      llmQuotaUrl: from('llm-quota-url', 'LLM_QUOTA_URL', hints.llmQuotaUrl),
      // an empty variable is unset, as the services read it
      internalSecret: env.PLATFORM_INTERNAL_SECRET || hints.internalSecret,
      timeoutSeconds:
        seconds(values.timeout, '--timeout') ?? seconds(env.PLATFORM_TIMEOUT, 'PLATFORM_TIMEOUT'),
    };
    const outcome = await dispatch(positionals, values, settings);
    if (values.json) io.out(JSON.stringify({ result: outcome.result, data: outcome.data }));
    else {
      io.out(`${outcome.result}: ${JSON.stringify(outcome.data, null, 2)}`);
      for (const note of outcome.notes ?? []) io.out(note);
    }
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      // Not found where nothing named: most likely a pnpm start runs, on another data folder than this one.
      const elsewhere =
        Object.keys(hints).length === 0 &&
        values.url === undefined &&
        !env.PLATFORM_URL &&
        (err instanceof NoServiceUrl ||
          (err instanceof CannotReach && err.origin === new URL(DEFAULT_URL).origin));
      const note =
        err instanceof NoOperatorToken
          ? howToGetAToken(settings?.url ?? DEFAULT_URL)
          : (hints.note ??
            (elsewhere
              ? `Against a running pnpm start, run this with the same DATA_DIR (none runs on ${dataDirOf(env)}).`
              : undefined));
      io.err(err.message);
      if (note) io.err(note);
      // the whole help would bury the two lines that say what to do
      if (err.exitCode === 2 && !(err instanceof MissingSetting)) io.err(`\n${HELP}`);
      return failed(note ? `${err.message}\n${note}` : err.message, err.exitCode, err.data);
    }
    throw err;
  }
}

/** A whole number of seconds, up to a day, from a flag or the environment (empty: unset); else a usage error. */
function seconds(value: string | undefined, source: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 86_400)
    throw new CliError(`${source} is a whole number of seconds, 1 to 86400: ${JSON.stringify(value)}`, 2);
  return n;
}

/** put in front of a value beginning with one dash while the arguments are parsed, and taken off after */
const VALUE_MARK = '\u0000';

/**
 * The command line. The CLI's only short option is `-h`: any other word beginning with one dash is a value, such as a
 * signing key's id (base64url, which may begin with `-`: `keys revoke -uDno…` was a usage error one time in 64).
 */
export function parse(argv: string[]) {
  const marked = argv.map((arg) => (/^-[^-]/.test(arg) && arg !== '-h' ? VALUE_MARK + arg : arg));
  const parsed = parseOptions(marked);
  const unmark = (value: string) => (value.startsWith(VALUE_MARK) ? value.slice(1) : value);
  const values = Object.fromEntries(
    Object.entries(parsed.values).map(([name, value]) => [
      name,
      typeof value === 'string' ? unmark(value) : Array.isArray(value) ? value.map(unmark) : value,
    ]),
  ) as typeof parsed.values;
  return { values, positionals: parsed.positionals.map(unmark) };
}

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      help: { type: 'boolean', short: 'h' },
      json: { type: 'boolean' },
      url: { type: 'string' },
      token: { type: 'string' },
      'auth-url': { type: 'string' },
      'llm-quota-url': { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      permission: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      project: { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      'post-logout-redirect-uri': { type: 'string', multiple: true },
      'no-post-logout-redirect-uri': { type: 'boolean' },
      confidential: { type: 'boolean' },
      public: { type: 'boolean' },
      'rotate-secret': { type: 'boolean' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      'client-secret-file': { type: 'string' },
      'no-client-secret': { type: 'boolean' },
      org: { type: 'string' },
      'no-org': { type: 'boolean' },
      'gateway-url': { type: 'string' },
      timeout: { type: 'string' },
      type: { type: 'string' },
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      'api-key-file': { type: 'string' },
      'no-api-key': { type: 'boolean' },
      'no-headers': { type: 'boolean' },
      header: { type: 'string', multiple: true },
      'azure-api-version': { type: 'string' },
      out: { type: 'string' },
      all: { type: 'boolean' },
    },
  });
}

type Values = ReturnType<typeof parseOptions>['values'];

/**
 * A secret from `--NAME`, or from the file `--NAME-file` names (`/dev/stdin`: a pipe), which keeps it out of `ps` and
 * the shell's history; the newline ending the file is not part of it.
 */
function secretOption(values: Values, name: 'api-key' | 'client-secret'): string | undefined {
  const file = values[`${name}-file`];
  // given empty, it would be left out: a provider saved without its key, a stored client secret removed
  if (values[name] === '')
    throw new CliError(
      `--${name} is empty (an unset variable?): give the secret, or leave the option out`,
      2,
    );
  if (file === undefined) return values[name];
  if (values[name] !== undefined) throw new CliError(`Give --${name} or --${name}-file, not both`, 2);
  let text: string;
  try {
    // /dev/stdin read as the descriptor: opening it by name fails (ENXIO) when it is a socket, as Node pipes a child's
    text = readFileSync(file === '/dev/stdin' ? 0 : file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read --${name}-file ${file}: ${(err as Error).message}`);
  }
  const secret = text.replace(/\r?\n$/, '');
  if (!secret) throw new CliError(`--${name}-file ${file} is empty`, 2);
  return secret;
}

/** Runs the command `positionals` names; a wrong number of arguments is a usage error naming its options. */
export function dispatch(positionals: string[], values: Values, s: CliSettings): Promise<Outcome> {
  const [group, verb, ...args] = positionals;
  const need = (n: number, usage: string) => {
    if (args.length !== n) throw new CliError(`Usage: pnpm platform ${usage}`, 2);
  };
  switch (`${group} ${verb}`) {
    case 'org create':
      need(1, 'org create <slug> [--name NAME]');
      return createOrg(s, args[0]!, values.name ?? args[0]!);
    case 'member add':
      need(2, 'member add <org> <userId> [--role ROLE]');
      return addMember(s, args[0]!, args[1]!, values.role);
    case 'plan assign':
      need(2, 'plan assign <org> <plan>');
      return assignPlan(s, args[0]!, args[1]!);
    case 'apikey issue':
      need(1, 'apikey issue <org> --name NAME [--permission P]... [--scope S]... [--project ID]');
      if (!values.name) throw new CliError('apikey issue needs --name', 2);
      return issueOrgApiKey(s, args[0]!, {
        name: values.name,
        permissions: values.permission ?? [],
        scopes: values.scope ?? [],
        projectId: values.project,
      });
    case 'keys rotate':
      need(0, 'keys rotate');
      return rotateKeys(s);
    case 'keys list':
      need(0, 'keys list');
      return listKeys(s);
    case 'keys revoke':
      need(1, 'keys revoke <kid>');
      return revokeKey(s, args[0]!);
    case 'oidc-client add': {
      need(
        1,
        'oidc-client add <clientId> [--redirect-uri URI]... [--post-logout-redirect-uri URI... | --no-post-logout-redirect-uri] [--name NAME] [--confidential | --public] [--rotate-secret]',
      );
      const {
        'redirect-uri': redirectUris,
        'post-logout-redirect-uri': postLogoutRedirectUris,
        'no-post-logout-redirect-uri': noPostLogoutRedirectUris,
        name,
        confidential,
        public: isPublic,
        'rotate-secret': rotateSecret,
      } = values;
      if (confidential && isPublic) throw new CliError('Give --confidential or --public, not both', 2);
      if (rotateSecret && isPublic)
        throw new CliError('Give --rotate-secret or --public, not both (a public client has no secret)', 2);
      if (noPostLogoutRedirectUris && postLogoutRedirectUris)
        throw new CliError('Give --post-logout-redirect-uri or --no-post-logout-redirect-uri, not both', 2);
      // left out, the stored name is kept: an empty one (an unset variable) is not taken for that
      if (name === '')
        throw new CliError('--name is empty (an unset variable?): give the name, or leave the option out', 2);
      // left out, auth keeps what the client is (a new one without --redirect-uri: auth's 400 names the field)
      return addOidcClient(s, args[0]!, {
        name,
        redirectUris,
        postLogoutRedirectUris: noPostLogoutRedirectUris ? [] : postLogoutRedirectUris,
        confidential: isPublic ? false : confidential,
        rotateSecret,
      });
    }
    case 'sso add': {
      need(
        1,
        'sso add <slug> --issuer URL --client-id ID [--client-secret S | --client-secret-file FILE | --no-client-secret] [--name NAME] [--org ORG | --no-org]',
      );
      const {
        issuer,
        'client-id': clientId,
        'client-secret': secret,
        'client-secret-file': secretFile,
        'no-client-secret': noSecret,
        org,
        'no-org': noOrg,
        name = args[0]!,
      } = values;
      if (!issuer || !clientId) throw new CliError('sso add needs --issuer and --client-id', 2);
      if (noSecret && (secret ?? secretFile) !== undefined)
        throw new CliError(
          'Give --client-secret, --client-secret-file or --no-client-secret, one of them',
          2,
        );
      if (noOrg && org !== undefined) throw new CliError('Give --org or --no-org, not both', 2);
      // left out, the stored organization is kept: an empty one (an unset variable) is not taken for that
      if (org === '')
        throw new CliError(
          "--org is empty (an unset variable?): give the organization, or --no-org for the platform's provider",
          2,
        );
      return addSsoProvider(s, args[0]!, {
        name,
        issuer,
        clientId,
        clientSecret: noSecret ? null : secretOption(values, 'client-secret'),
        orgSlug: noOrg ? null : org,
      });
    }
    case 'admin grant':
    case 'admin revoke':
      need(1, `admin ${verb} <userId>`);
      return grantPlatformAdmin(s, args[0]!, verb === 'grant');
    case 'providers add': {
      need(
        1,
        'providers add <name> --type openai|anthropic|mock [--base-url URL] [--api-key KEY | --api-key-file FILE | --no-api-key] [--header NAME=VALUE]... [--no-headers] [--azure-api-version V]',
      );
      if (!values.type) throw new CliError('providers add needs --type', 2);
      const options = {
        type: values.type,
        baseUrl: values['base-url'],
        headers: values.header ?? [],
        azureApiVersion: values['azure-api-version'],
        removeHeaders: values['no-headers'] ?? false,
        removeApiKey: values['no-api-key'] ?? false,
        apiKey: secretOption(values, 'api-key'),
      };
      if (options.removeApiKey && options.apiKey !== undefined)
        throw new CliError('Give --api-key, --api-key-file or --no-api-key, one of them', 2);
      return addProvider(s, args[0]!, options);
    }
    case 'providers list':
      need(0, 'providers list');
      return listProviders(s);
    case 'providers remove':
      need(1, 'providers remove <name>');
      return removeProvider(s, args[0]!);
    case 'providers test':
      need(1, 'providers test <name> --org ORG');
      if (!values.org)
        throw new CliError('providers test needs --org (smoke tests run as an organization)', 2);
      return testProvider(s, args[0]!, values.org);
    case 'models import':
      need(1, 'models import <file>');
      return importModels(s, args[0]!);
    case 'models export':
      need(0, 'models export [--out FILE]');
      return exportModels(s, values.out);
    case 'models enable':
    case 'models disable':
      need(1, `models ${verb} <modelId>`);
      return setModelEnabled(s, args[0]!, verb === 'enable');
    case 'org allow':
      if (values.all) {
        need(1, 'org allow <org> --all');
        return allowModels(s, args[0]!, null);
      }
      if (args.length < 2) throw new CliError('Usage: pnpm platform org allow <org> <modelId>... | --all', 2);
      return allowModels(s, args[0]!, args.slice(1));
    case 'org default':
      need(3, 'org default <org> completions|embeddings <modelId|none>');
      return setOrgDefault(s, args[0]!, args[1]!, args[2]!);
    case 'org downgrade':
      need(3, 'org downgrade <org> <fromModel> <toModel|none>');
      return setDowngrade(s, args[0]!, args[1]!, args[2]!);
    default:
      throw new CliError(`Unknown command: ${positionals.join(' ')}`, 2);
  }
}
