import { execFile } from 'node:child_process';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `podman <args>`; rejects with its output unless it exits 0 (or `allowFailure`). */
export function podman(args: string[], options: { allowFailure?: boolean } = {}): Promise<Result> {
  return new Promise((resolve, reject) => {
    execFile('podman', args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      const result = { code, stdout: stdout.trim(), stderr: stderr.trim() };
      if (code !== 0 && !options.allowFailure) {
        reject(new Error(`podman ${args.join(' ')} exited with ${code}\n${stderr.slice(-4000)}`));
      } else resolve(result);
    });
  });
}

/** One field of `podman inspect`, as text. */
export async function inspect(name: string, format: string): Promise<string> {
  return (await podman(['inspect', '--format', format, name])).stdout;
}
