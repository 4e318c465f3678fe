import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, waitFor } from '@platform/testkit';

/**
 * Each service README's "run alone" command works as written: run from the repository root, it starts
 * the service, which answers, and stops on SIGTERM. (PORT and DATA_DIR are set on top, as documented,
 * so the test takes a free port and a fresh folder.)
 */
const ROOT = path.resolve(__dirname, '../..');
const SERVICES = ['auth', 'llm-quota', 'legacy-agent', 'llm-gateway'];

function runAloneCommand(service: string): string {
  const readme = readFileSync(path.join(ROOT, 'services', service, 'README.md'), 'utf8');
  const block = new RegExp(`<!-- run-alone: ${service} -->\\s*\`\`\`sh\\n([^\\n]+)\\n\`\`\``).exec(readme);
  if (!block) throw new Error(`services/${service}/README.md has no run-alone block`);
  return block[1]!;
}

describe("each service's README command runs it alone", () => {
  it.each(SERVICES)(
    '%s',
    async (service) => {
      const data = tempDir(`run-alone-${service}-`);
      const child = spawn('sh', ['-c', runAloneCommand(service)], {
        cwd: ROOT,
        env: { ...process.env, PORT: '0', ADMIN_PORT: '0', DATA_DIR: data.dir, NATS_URL: '', MONGO_URL: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => {
        output += d.toString();
      });
      child.stderr!.on('data', (d: Buffer) => {
        output += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        const url = await waitFor(
          () => /"url":"(http:\/\/[^"]+)",[^}]*"msg":"[\w-]+ listening"/.exec(output)?.[1],
          {
            timeoutMs: 45_000,
            what: `${service} listening (output so far: ${output.slice(-500)})`,
          },
        );
        const res = await fetch(`${url}/openapi.json`);
        expect(res.status).toBe(200);
      } finally {
        // the whole group (sh, pnpm, tsx, node) as a terminal's Ctrl-C would
        process.kill(-child.pid!, 'SIGTERM');
        await exited;
        // sh exits first: the service may still be closing its store in the data folder
        await waitFor(
          () => {
            try {
              process.kill(-child.pid!, 0);
              return false;
            } catch {
              return true;
            }
          },
          { timeoutMs: 20_000, what: `${service}'s processes to exit` },
        );
        data.remove();
      }
    },
    60_000,
  );
});
