import { SimulatedProviderError } from './answers';

/**
 * Anthropic's prompt cache, simulated (decision 0113's tests): a request's prefix up to each `cache_control`
 * breakpoint (tools, then system, then messages) is remembered per model; a later request repeating one reads the
 * longest remembered prefix from the cache, and writes what lies between it and its last breakpoint: to the 1-hour
 * cache up to its last `ttl: "1h"` breakpoint, to the 5-minute one after it. No minimum length and no expiry:
 * `reset()` forgets it. The breakpoints are checked as the real API checks them.
 */

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function bad(message: string): never {
  throw new SimulatedProviderError(400, 'invalid_request_error', message);
}

/** Where a breakpoint is: the request cut just after the block (or tool) that carries it. */
interface Breakpoint {
  prefix: Json;
  ttl: string;
}

function checked(item: Json, where: string): string | null {
  const mark = item.cache_control;
  if (mark === undefined || mark === null) return null;
  if (
    !isObject(mark) ||
    mark.type !== 'ephemeral' ||
    Object.keys(mark).some((k) => k !== 'type' && k !== 'ttl')
  )
    bad(`${where}.cache_control: Input should be {type: 'ephemeral', ttl?}`);
  if (mark.ttl !== undefined && mark.ttl !== '5m' && mark.ttl !== '1h')
    bad(`${where}.cache_control.ttl: Input should be '5m' or '1h'`);
  if (item.type === 'text' && (typeof item.text !== 'string' || item.text.trim() === ''))
    bad(`${where}: cache_control cannot be set for empty text blocks`);
  return (mark.ttl as string | undefined) ?? '5m';
}

/** The request's breakpoints in Anthropic's order, each with the prefix it closes; refuses what Anthropic refuses. */
export function breakpointsOf(body: Json): Breakpoint[] {
  const found: Breakpoint[] = [];
  const tools = list(body.tools);
  const system = list(body.system);
  const messages = list(body.messages);
  tools.forEach((tool, i) => {
    const ttl = isObject(tool) ? checked(tool, `tools.${i}`) : null;
    if (ttl) found.push({ ttl, prefix: { tools: tools.slice(0, i + 1), messages: [] } });
  });
  system.forEach((block, i) => {
    const ttl = isObject(block) ? checked(block, `system.${i}`) : null;
    if (ttl) found.push({ ttl, prefix: { tools, system: system.slice(0, i + 1), messages: [] } });
  });
  messages.forEach((message, i) => {
    if (!isObject(message)) return;
    const blocks = list(message.content);
    blocks.forEach((block, j) => {
      if (!isObject(block)) return;
      if (block.type === 'thinking' && block.cache_control != null)
        bad(`messages.${i}.content.${j}: cache_control cannot be set on thinking blocks`);
      let ttl = checked(block, `messages.${i}.content.${j}`);
      list(block.content).forEach((inner, k) => {
        if (isObject(inner)) ttl = checked(inner, `messages.${i}.content.${j}.content.${k}`) ?? ttl;
      });
      if (!ttl) return;
      const cut = [...messages.slice(0, i), { ...message, content: blocks.slice(0, j + 1) }];
      found.push({
        ttl,
        prefix: { tools, ...(body.system !== undefined ? { system: body.system } : {}), messages: cut },
      });
    });
  });
  if (found.length > 4)
    bad(`A maximum of 4 blocks with cache_control may be provided. Found ${found.length}.`);
  const short = found.findIndex((b) => b.ttl === '5m');
  if (short !== -1 && found.slice(short).some((b) => b.ttl === '1h'))
    bad('a ttl=1h cache_control block must not come after a ttl=5m cache_control block');
  return found;
}

/** The simulator's prompt cache: the prefixes it has seen, by model. */
export class SimulatedPromptCache {
  private readonly seen = new Set<string>();

  clear(): void {
    this.seen.clear();
  }

  /**
   * The tokens a request reads from the cache and writes to it (`count` counts a prefix as the request's input
   * tokens are counted), remembering its prefixes. Null for a request without breakpoints.
   */
  use(
    body: Json,
    count: (prefix: Json) => number,
  ): { read: number; written: number; writtenHour: number } | null {
    const breakpoints = breakpointsOf(body);
    if (breakpoints.length === 0) return null;
    // the marks are not content: a prefix is the same whichever blocks carry them
    const keys = breakpoints.map(
      (b) =>
        `${String(body.model)}\n${JSON.stringify(b.prefix, (k, v) => (k === 'cache_control' ? undefined : v))}`,
    );
    let read = 0;
    keys.forEach((key, i) => {
      if (this.seen.has(key)) read = Math.max(read, count(breakpoints[i]!.prefix));
    });
    const last = count(breakpoints[breakpoints.length - 1]!.prefix);
    // 1-hour breakpoints come first (breakpointsOf refuses one after a 5-minute one)
    const lastHour = breakpoints.filter((b) => b.ttl === '1h').at(-1);
    const hour = lastHour ? count(lastHour.prefix) : 0;
    for (const key of keys) this.seen.add(key);
    return { read, written: Math.max(0, last - read), writtenHour: Math.max(0, hour - read) };
  }
}
