/**
 * Merges header records, later ones winning, with lower-case names so `Authorization` and
 * `authorization` from two sources never both reach the provider.
 */
export function mergeHeaders(...sources: Array<Record<string, string> | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of sources) {
    for (const [name, value] of Object.entries(source ?? {})) out[name.toLowerCase()] = value;
  }
  return out;
}
