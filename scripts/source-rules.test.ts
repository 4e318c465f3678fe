/**
 * Rules the sources follow that no linter checks, each with the decision that explains it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..');

/** every TypeScript source of the workspace (no dependencies, no build output) */
function sources(dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || ['node_modules', 'dist', 'coverage'].includes(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

describe('source rules', () => {
  it('never reads a key straight from a generation job: every generateKeyPair asks for encoded keys (decision 0087)', () => {
    const offenders: string[] = [];
    for (const file of sources()) {
      if (file === __filename) continue;
      const text = readFileSync(file, 'utf8');
      for (const call of text.matchAll(/\bgenerateKeyPair(?:Sync)?\(/g)) {
        // the call's own text, up to its closing parenthesis
        let depth = 0;
        let end = call.index + call[0].length - 1;
        for (; end < text.length; end++) {
          if (text[end] === '(') depth++;
          else if (text[end] === ')' && --depth === 0) break;
        }
        const args = text.slice(call.index, end);
        if (!/privateKeyEncoding|\.\.\.encodings/.test(args))
          offenders.push(`${path.relative(root, file)}:${text.slice(0, call.index).split('\n').length}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
