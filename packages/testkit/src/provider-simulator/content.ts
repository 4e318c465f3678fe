import { createHash } from 'node:crypto';

/**
 * Deterministic stand-ins for what a model does, so tests can compute the figures they expect.
 * A "token" here is a run of word characters or one other non-space character ("Hello, world!" = 4).
 */
export function countSimulatorTokens(text: string): number {
  return text.match(/\w+|[^\w\s]/g)?.length ?? 0;
}

/** Tokens per image part, as OpenAI's low-detail images count. */
export const SIMULATOR_IMAGE_TOKENS = 85;
/** Tokens each chat message adds besides its text (role and separators), and the reply's priming. */
export const SIMULATOR_MESSAGE_OVERHEAD = 3;

/** Splits a text into stream pieces: one token each, with the spaces before it. */
export function streamPieces(text: string): string[] {
  const pieces = text.match(/\s*(?:\w+|[^\w\s])/g) ?? [];
  const rest = text.slice(pieces.join('').length);
  return rest ? [...pieces, rest] : pieces;
}

/** Keeps the first `maxTokens` tokens of a text. */
export function truncateToTokens(text: string, maxTokens: number): string {
  let used = 0;
  let out = '';
  for (const piece of streamPieces(text)) {
    const tokens = countSimulatorTokens(piece);
    if (used + tokens > maxTokens) break;
    used += tokens;
    out += piece;
  }
  return out;
}

/** The default answer: derived from the last user text so different prompts get different answers. */
export function simulatedAnswer(lastUserText: string): string {
  const words = lastUserText.trim().split(/\s+/).filter(Boolean).slice(0, 12).join(' ');
  return words ? `Simulated answer to: ${words}` : 'Simulated answer.';
}

/** A unit-length vector derived from the text alone. */
export function simulatedEmbedding(text: string, dimensions: number): number[] {
  const values: number[] = [];
  for (let block = 0; values.length < dimensions; block += 1) {
    const digest = createHash('sha256').update(`${block}:${text}`).digest();
    for (let i = 0; i + 4 <= digest.length && values.length < dimensions; i += 4) {
      values.push(digest.readUInt32BE(i) / 0xffffffff - 0.5);
    }
  }
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0)) || 1;
  return values.map((v) => v / norm);
}

/** Float32 little-endian bytes in base64: OpenAI's `encoding_format: "base64"` (the SDK's default). */
export function embeddingToBase64(vector: number[]): string {
  return Buffer.from(new Float32Array(vector).buffer).toString('base64');
}

const words = (text: string) => new Set(text.toLowerCase().match(/\w+/g) ?? []);

/** Share of the query's distinct words found in the document, in [0, 1]. */
export function lexicalRelevance(query: string, document: string): number {
  const wanted = words(query);
  if (wanted.size === 0) return 0;
  const present = words(document);
  let hits = 0;
  for (const word of wanted) if (present.has(word)) hits += 1;
  return hits / wanted.size;
}

/** Arguments for a tool call built from the tool's JSON schema: one plausible value per property. */
export function argumentsFromSchema(schema: unknown): Record<string, unknown> {
  const properties = (schema as { properties?: Record<string, { type?: string; enum?: unknown[] }> })
    ?.properties;
  const out: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(properties ?? {})) {
    if (Array.isArray(prop?.enum) && prop.enum.length > 0) out[name] = prop.enum[0];
    else if (prop?.type === 'number' || prop?.type === 'integer') out[name] = 1;
    else if (prop?.type === 'boolean') out[name] = true;
    else if (prop?.type === 'array') out[name] = [];
    else if (prop?.type === 'object') out[name] = {};
    else out[name] = `example ${name}`;
  }
  return out;
}
