/**
 * Production build: bundles each service's `src/main.ts` (and any worker entry) with esbuild into
 * plain JavaScript that `node` runs without tsx.
 *
 *   pnpm build                          every service into services/<svc>/dist/
 *   pnpm build auth edge                only these
 *   pnpm build auth --out-dir /tmp/out  into /tmp/out/auth/ instead
 *   pnpm build auth --deploy /deploy    a self-contained folder: dist/, package.json and the service's
 *                                       production node_modules (from the frozen lockfile);
 *                                       `cd /deploy && node dist/main.js` runs it. The Dockerfiles use this.
 *
 * build/bundle.ts bundles (workspace packages inlined, third-party packages external); build/deploy.ts
 * makes the deploy folder (the bundle plus exactly the packages it loads, at the lockfile's versions).
 */
import path from 'node:path';
import { buildService, SERVICES } from './build/bundle';
import { deployService } from './build/deploy';

export * from './build/bundle';
export * from './build/deploy';

function parseArgs(argv: string[]) {
  const services: string[] = [];
  let outDir: string | undefined;
  let deploy: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--out-dir') outDir = argv[++i];
    else if (arg === '--deploy') deploy = argv[++i];
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: pnpm build [service...] [--out-dir DIR | --deploy DIR]');
      process.exit(0);
    } else if (arg.startsWith('-')) throw new Error(`unknown option ${arg}`);
    else services.push(arg);
  }
  if (deploy && services.length !== 1) throw new Error('--deploy takes exactly one service');
  if (outDir === '' || deploy === '') throw new Error('--out-dir and --deploy need a folder');
  return { services: services.length > 0 ? services : [...SERVICES], outDir, deploy };
}

async function main() {
  const { services, outDir, deploy } = parseArgs(process.argv.slice(2));
  for (const service of services) {
    console.log(`${service}:`);
    if (deploy) await deployService({ service, dir: deploy });
    else await buildService({ service, outDir: outDir && path.join(outDir, service) });
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(`build failed: ${err.message}`);
    process.exit(1);
  });
}
