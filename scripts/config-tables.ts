/**
 * Configuration tables of the READMEs, generated from the services' zod schemas so they cannot drift:
 * one row per schema key, its meaning from the key's description in `src/config.ts` (the doc comment
 * on the key, or a zod `.describe()`/`.meta({description})`), its default from the schema itself.
 *
 *   pnpm config:tables           rewrites every table between its markers
 *   pnpm config:tables --check   exits 1 (naming the README) when a table differs from its schema
 *
 * A key without a description stops the script: every key is documented.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { z } from 'zod';
import { authConfigSchema } from '../services/auth/src/config';
import { edgeConfigSchema } from '../services/edge/src/config';
import { legacyAgentConfigSchema } from '../services/legacy-agent/src/config';
import { llmGatewayConfigSchema } from '../services/llm-gateway/src/config';
import { llmQuotaConfigSchema } from '../services/llm-quota/src/config';

const ROOT = path.resolve(__dirname, '..');

interface TableSource {
  service: string;
  schema: z.ZodObject;
  /** keys the production entry reads besides the schema */
  extra: Array<[string, string, string]>;
}

const ENTRY_KEYS = (port: number): Array<[string, string, string]> => [
  ['PORT', 'listening port (the production entry, `src/main.ts`)', `\`${port}\``],
  ['HOST', 'listening address', '`0.0.0.0`'],
];

export const TABLES: TableSource[] = [
  { service: 'edge', schema: edgeConfigSchema, extra: ENTRY_KEYS(8080) },
  { service: 'auth', schema: authConfigSchema, extra: ENTRY_KEYS(8081) },
  { service: 'llm-quota', schema: llmQuotaConfigSchema, extra: ENTRY_KEYS(8082) },
  { service: 'legacy-agent', schema: legacyAgentConfigSchema, extra: ENTRY_KEYS(8083) },
  { service: 'llm-gateway', schema: llmGatewayConfigSchema, extra: ENTRY_KEYS(8084) },
];

/** Doc comments of every `KEY: ...` property in a source file (the schema's own and its spreads'). */
function docComments(file: string): Map<string, string> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const docs = new Map<string, string>();
  const visit = (node: ts.Node) => {
    if (
      ts.isPropertyAssignment(node) &&
      ts.isIdentifier(node.name) &&
      /^[A-Z][A-Z0-9_]+$/.test(node.name.text)
    ) {
      const jsDoc = (node as unknown as { jsDoc?: ts.JSDoc[] }).jsDoc?.at(-1);
      const text =
        typeof jsDoc?.comment === 'string' ? jsDoc.comment : ts.getTextOfJSDocComment(jsDoc?.comment);
      if (text) docs.set(node.name.text, text.replace(/\s+/g, ' ').trim());
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return docs;
}

type Def = {
  type: string;
  defaultValue?: unknown;
  in?: { _zod: { def: Def } };
  innerType?: { _zod: { def: Def } };
};

/** The default a key takes when unset, as the README shows it. */
function defaultOf(schema: z.ZodType): string {
  let def = (schema as unknown as { _zod: { def: Def } })._zod.def;
  for (;;) {
    if (def.type === 'default') {
      const value = typeof def.defaultValue === 'function' ? def.defaultValue() : def.defaultValue;
      if (value instanceof Date) return `\`${value.toISOString()}\``;
      return value === '' ? 'empty' : `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;
    }
    if (def.type === 'optional') return 'unset';
    if (def.type === 'pipe' && def.in) def = def.in._zod.def;
    else if (def.innerType) def = def.innerType._zod.def;
    else return 'required';
  }
}

const cell = (text: string) => text.replace(/\|/g, '\\|');

export function tableOf(source: TableSource): string {
  const docs = new Map([
    ...docComments(path.join(ROOT, 'packages/kernel/src/common-config.ts')),
    ...docComments(path.join(ROOT, 'services', source.service, 'src/config.ts')),
  ]);
  const rows: Array<[string, string, string]> = [];
  for (const [key, schema] of Object.entries(source.schema.shape) as Array<[string, z.ZodType]>) {
    const described = schema.description ?? z.globalRegistry.get(schema)?.description ?? docs.get(key);
    if (!described) throw new Error(`services/${source.service}/src/config.ts: ${key} has no description`);
    rows.push([`\`${key}\``, cell(described), defaultOf(schema)]);
  }
  for (const [key, meaning, fallback] of source.extra) rows.push([`\`${key}\``, meaning, fallback]);
  const widths = [0, 1, 2].map((i) =>
    Math.max(...rows.map((r) => r[i]!.length), ['Name', 'Meaning', 'Default'][i]!.length),
  );
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [
    line(['Name', 'Meaning', 'Default']),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.map(line),
  ].join('\n');
}

const marker = (service: string) => ({
  start: `<!-- config-table: ${service} (generated from src/config.ts by \`pnpm config:tables\`; edit the schema, not this table) -->`,
  end: `<!-- /config-table: ${service} -->`,
});

/** Every README holding a table of `service`, with the table as it should read. */
export function expectedReadmes(): Array<{ file: string; text: string; current: string }> {
  const files = ['README.md', ...TABLES.map((t) => `services/${t.service}/README.md`)];
  return files.map((relative) => {
    const file = path.join(ROOT, relative);
    const current = readFileSync(file, 'utf8');
    let text = current;
    for (const source of TABLES) {
      const { start, end } = marker(source.service);
      const from = text.indexOf(start);
      if (from < 0) continue;
      const to = text.indexOf(end, from);
      if (to < 0) throw new Error(`${relative}: ${start} without ${end}`);
      text = `${text.slice(0, from + start.length)}\n\n${tableOf(source)}\n\n${text.slice(to)}`;
    }
    return { file: relative, text, current };
  });
}

if (require.main === module) {
  const check = process.argv.includes('--check');
  let drift = 0;
  for (const { file, text, current } of expectedReadmes()) {
    if (text === current) continue;
    drift++;
    if (check)
      console.error(`${file}: its configuration table differs from the schema (run pnpm config:tables)`);
    else writeFileSync(path.join(ROOT, file), text);
  }
  if (check && drift) process.exit(1);
  console.log(
    check ? 'configuration tables match the schemas' : `configuration tables written (${drift} files)`,
  );
}
