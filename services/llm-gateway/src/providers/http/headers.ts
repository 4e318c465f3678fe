/** Connection-level headers: fetch sets them itself (and refuses some), a forwarded one is dropped. */
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authorization',
  'proxy-connection',
]);

/**
 * Merges header records, later ones winning, with lower-case names so `Authorization` and
 * `authorization` from two sources never both reach the provider. Connection-level headers are dropped.
 */
export function mergeHeaders(...sources: Array<Record<string, string> | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of sources) {
    for (const [name, value] of Object.entries(source ?? {})) {
      const key = name.toLowerCase();
      if (!HOP_BY_HOP.has(key)) out[key] = value;
    }
  }
  return out;
}
