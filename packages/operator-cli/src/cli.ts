import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CliError, type CliSettings } from './client';
import {
  addMember,
  addOidcClient,
  addSsoProvider,
  assignPlan,
  createOrg,
  issueOrgApiKey,
  type Outcome,
  rotateKeys,
} from './commands';

export const HELP = `Usage: pnpm platform <command> [options]

Operator commands. Each is idempotent: running it again reports what exists instead of failing.

  org create <slug> [--name NAME]              create an organization (the operator becomes its owner)
  member add <org> <userId> [--role ROLE]      add a member (default role: member), or change its role
  plan assign <org> <plan>                     assign an LLM plan to an organization
  apikey issue <org> --name NAME [--permission P]... [--scope S]... [--project ID]
                                               issue an organization API key (shown once)
  keys rotate                                  rotate the signing keys now (published before it signs)
  oidc-client add <clientId> --redirect-uri URI [--redirect-uri URI]... [--post-logout-redirect-uri URI]...
                  [--name NAME] [--confidential]
                                               register an OpenID Connect client (public, PKCE, unless
                                               --confidential: then its secret is shown once)
  sso add <slug> --issuer URL --client-id ID [--client-secret S] [--name NAME] [--org ORG]
                                               name an external OpenID Connect identity provider
                                               (with --org: a company's, whose users join ORG)

Connection (flags win over the environment):
  --url URL            the edge's base URL           PLATFORM_URL   (default http://localhost:8080)
  --token TOKEN        operator session JWT or at:   PLATFORM_TOKEN
  --auth-url URL       auth, for keys rotate, oidc-client add, sso add   AUTH_URL
  --llm-quota-url URL  llm-quota, for plan assign    LLM_QUOTA_URL
                       the shared internal secret    PLATFORM_INTERNAL_SECRET
  Against a local \`pnpm start\`, the last three are read from DATA_DIR/standalone.json.

  --json               print the outcome as JSON
  -h, --help           this text
`;

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** Reads what a local standalone platform wrote about itself (its internal URLs and secret). */
function standaloneHints(env: Record<string, string | undefined>): Partial<CliSettings> {
  const file = path.resolve(env.DATA_DIR ?? './data', 'standalone.json');
  try {
    const hints = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    return { authUrl: hints.authUrl, llmQuotaUrl: hints.llmQuotaUrl, internalSecret: hints.internalSecret };
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
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    io.out(HELP);
    return values.help ? 0 : 2;
  }
  const hints = standaloneHints(env);
  const settings: CliSettings = {
    url: (values.url ?? env.PLATFORM_URL ?? 'http://localhost:8080').replace(/\/$/, ''),
    token: values.token ?? env.PLATFORM_TOKEN,
    authUrl: values['auth-url'] ?? env.AUTH_URL ?? hints.authUrl,
    llmQuotaUrl: values['llm-quota-url'] ?? env.LLM_QUOTA_URL ?? hints.llmQuotaUrl,
    internalSecret: env.PLATFORM_INTERNAL_SECRET ?? hints.internalSecret,
  };
  try {
    const outcome = await dispatch(positionals, values, settings);
    if (values.json) io.out(JSON.stringify(outcome));
    else io.out(`${outcome.result}: ${JSON.stringify(outcome.data, null, 2)}`);
    return 0;
  } catch (err) {
    if (err instanceof CliError) {
      io.err(err.message);
      if (err.exitCode === 2) io.err(`\n${HELP}`);
      return err.exitCode;
    }
    throw err;
  }
}

function parse(argv: string[]) {
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
      confidential: { type: 'boolean' },
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
      org: { type: 'string' },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

function dispatch(positionals: string[], values: Values, s: CliSettings): Promise<Outcome> {
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
      return addMember(s, args[0]!, args[1]!, values.role ?? 'member');
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
    case 'oidc-client add':
      need(1, 'oidc-client add <clientId> --redirect-uri URI [--name NAME] [--confidential]');
      if (!values['redirect-uri']?.length) throw new CliError('oidc-client add needs --redirect-uri', 2);
      return addOidcClient(s, args[0]!, {
        name: values.name,
        redirectUris: values['redirect-uri'],
        postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
        confidential: values.confidential ?? false,
      });
    case 'sso add':
      need(1, 'sso add <slug> --issuer URL --client-id ID [--client-secret S] [--name NAME] [--org ORG]');
      if (!values.issuer || !values['client-id'])
        throw new CliError('sso add needs --issuer and --client-id', 2);
      return addSsoProvider(s, args[0]!, {
        name: values.name ?? args[0]!,
        issuer: values.issuer,
        clientId: values['client-id'],
        ...(values['client-secret'] ? { clientSecret: values['client-secret'] } : {}),
        ...(values.org ? { orgSlug: values.org } : {}),
      });
    default:
      throw new CliError(`Unknown command: ${positionals.join(' ')}`, 2);
  }
}
