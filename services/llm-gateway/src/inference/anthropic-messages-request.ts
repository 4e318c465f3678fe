import { cacheControlProblem, MAX_CACHE_BREAKPOINTS, tooManyBreakpoints } from './cache-breakpoints';
import { invalidBody } from './errors';
import type { ChatRequest } from './provider-port';

/**
 * Anthropic's Messages request (`POST /v1/messages`) said in chat completions' terms, so that it takes the
 * gateway's own chat path on every completion model (decision 0111). What chat cannot carry and the answer does not
 * depend on is ignored (`top_k`…); what the caller would silently miss is refused with a 400 naming the
 * field, before any quota is taken or provider called. Prompt-cache breakpoints (`cache_control`) are kept in
 * chat's convention, so that an Anthropic model gets them on the same blocks (decision 0113), and so is extended
 * thinking: the request's `thinking` and the signed thinking blocks of earlier turns (decision 0114).
 */

type Json = Record<string, unknown>;
type Issue = { field: string; message: string };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The members the translation reads (the schema checks their shapes). */
const READ = new Set([
  'model',
  'max_tokens',
  'messages',
  'system',
  'tools',
  'tool_choice',
  'stop_sequences',
  'temperature',
  'top_p',
  'metadata',
  'stream',
  'output_config',
  'output_format',
  'cache_control',
  'thinking',
]);

/**
 * Accepted and not sent: chat has no form for them and the answer keeps its shape without them. `top_k` (OpenAI
 * refuses the member), `service_tier` and `speed` (the provider's
 * capacity), `context_management` (the conversation is sent as it is), `diagnostics` (Anthropic's prompt-cache
 * report).
 */
const IGNORED = new Set(['top_k', 'service_tier', 'speed', 'context_management', 'diagnostics']);

/**
 * Members that ask for what the gateway has not: server-side MCP, code-execution containers, a region of
 * inference (a constraint the caller would silently miss). Null is their default.
 */
const REFUSED: Record<string, string> = {
  mcp_servers: 'is not supported: the gateway connects to no MCP server (define the tools as client tools)',
  container: 'is not supported: the gateway runs no code-execution container',
  inference_geo: "is not supported: where a model runs is its provider's (the catalogue's `region`)",
};

const refuse = (issues: Issue[]): never => {
  throw invalidBody(
    `Not supported by the gateway's Messages API: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
    issues,
  );
};

/** The request's members the gateway does not serve, each named with why (checked before the schema). */
export function refuseUnsupportedMessages(body: unknown): void {
  if (!isObject(body)) return; // the schema says what is wrong with it
  const issues: Issue[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (READ.has(key) || IGNORED.has(key) || value === null) continue;
    // an own member only: `__proto__` or `constructor` in a body must not find Object's
    const why = Object.hasOwn(REFUSED, key) ? REFUSED[key] : 'is not supported';
    issues.push({ field: key, message: why! });
  }
  if (Array.isArray(body.tools))
    body.tools.forEach((tool, i) => {
      if (isObject(tool) && tool.type !== undefined && tool.type !== null && tool.type !== 'custom')
        issues.push({
          field: `tools.${i}.type`,
          message: `'${String(tool.type)}' is not supported: only client tools (name, description, input_schema); the gateway runs no server tools`,
        });
    });
  if (issues.length > 0) refuse(issues);
}

/** A block's prompt-cache breakpoint, checked (an issue naming it when it is not Anthropic's shape); null is none. */
function breakpointOf(block: Json, field: string, issues: Issue[]): Json | undefined {
  const mark = block.cache_control;
  if (mark === undefined || mark === null) return undefined;
  const problem = cacheControlProblem(mark);
  if (problem === null) return mark as Json;
  issues.push({ field: field === '' ? 'cache_control' : `${field}.cache_control`, message: problem });
  return undefined;
}

const marked = (mark: Json | undefined): Json => (mark ? { cache_control: mark } : {});

/**
 * The path of the request's fifth breakpoint (Anthropic's limit is four), or null: tools, system blocks, message
 * blocks and the blocks inside tool results, then the request's own (automatic caching takes a slot too).
 */
function excessBreakpoint(body: Json): string | null {
  let count = 0;
  const over = (item: unknown) =>
    isObject(item) && item.cache_control != null && ++count > MAX_CACHE_BREAKPOINTS;
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  const tools = list(body.tools);
  for (let i = 0; i < tools.length; i++) if (over(tools[i])) return `tools.${i}.cache_control`;
  const system = list(body.system);
  for (let i = 0; i < system.length; i++) if (over(system[i])) return `system.${i}.cache_control`;
  const messages = list(body.messages);
  for (let i = 0; i < messages.length; i++) {
    const blocks = list((messages[i] as Json | undefined)?.content);
    for (let j = 0; j < blocks.length; j++) {
      const block = blocks[j];
      const inner = isObject(block) && block.type === 'tool_result' ? list(block.content) : [];
      for (let k = 0; k < inner.length; k++)
        if (over(inner[k])) return `messages.${i}.content.${j}.content.${k}.cache_control`;
      if (over(block)) return `messages.${i}.content.${j}.cache_control`;
    }
  }
  return over(body) ? 'cache_control' : null;
}

/** An image block's source as the URL chat's `image_url` part takes (base64 as a data URL). */
function imageUrl(block: Json, field: string, issues: Issue[]): string | null {
  const source = isObject(block.source) ? block.source : {};
  if (source.type === 'base64' && typeof source.media_type === 'string' && typeof source.data === 'string')
    return `data:${source.media_type};base64,${source.data}`;
  if (source.type === 'url' && typeof source.url === 'string' && source.url !== '') return source.url;
  issues.push({
    field: `${field}.source`,
    message: 'an image source must be base64 (media_type and data) or url: file sources are not supported',
  });
  return null;
}

const imagePart = (url: string): Json => ({ type: 'image_url', image_url: { url } });

/** A tool result's content: its text for the tool message, its images for a user message after it. */
function toolResultContent(
  block: Json,
  field: string,
  issues: Issue[],
): { text: string; images: Json[]; mark: Json | undefined } {
  const content = block.content;
  const images: Json[] = [];
  let text = '';
  // a breakpoint in the result's content marks the result: chat's tool message is one block
  let mark = breakpointOf(block, field, issues);
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content))
    content.forEach((part, i) => {
      const where = `${field}.content.${i}`;
      if (isObject(part)) mark = breakpointOf(part, where, issues) ?? mark;
      if (isObject(part) && part.type === 'text' && typeof part.text === 'string')
        text += (text === '' ? '' : '\n') + part.text;
      else if (isObject(part) && part.type === 'image') {
        const url = imageUrl(part, where, issues);
        if (url) images.push(imagePart(url));
      } else
        issues.push({
          field: `${where}.type`,
          message: `'${isObject(part) ? String(part.type) : typeof part}' is not supported in a tool_result: text or image`,
        });
    });
  else if (content !== undefined && content !== null)
    issues.push({ field: `${field}.content`, message: 'a string or an array of text and image blocks' });
  // chat's tool message has no error flag: the model reads it in the text
  if (block.is_error === true) text = text === '' ? 'Error' : `Error: ${text}`;
  return { text, images, mark };
}

const onlyToolResults = (content: unknown) =>
  Array.isArray(content) && content.every((block) => isObject(block) && block.type === 'tool_result');

/**
 * One user turn: its tool results first, as chat's tool messages (which must follow the assistant's calls), then
 * a user message with its text and images, and the images the tool results held.
 */
function userTurn(
  content: unknown,
  field: string,
  issues: Issue[],
  messages: Json[],
  toolUses: ReadonlySet<string>,
): void {
  if (typeof content === 'string') {
    messages.push({ role: 'user', content });
    return;
  }
  const parts: Json[] = [];
  const tools: Json[] = [];
  (content as unknown[]).forEach((block, i) => {
    const where = `${field}.${i}`;
    if (!isObject(block)) {
      issues.push({ field: where, message: 'a content block must be an object with a type' });
      return;
    }
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string')
          parts.push({ type: 'text', text: block.text, ...marked(breakpointOf(block, where, issues)) });
        else issues.push({ field: `${where}.text`, message: 'a text block needs its text' });
        return;
      case 'image': {
        const url = imageUrl(block, where, issues);
        if (url) parts.push({ ...imagePart(url), ...marked(breakpointOf(block, where, issues)) });
        return;
      }
      case 'tool_result': {
        if (typeof block.tool_use_id !== 'string' || block.tool_use_id === '') {
          issues.push({ field: `${where}.tool_use_id`, message: 'a tool_result needs its tool_use_id' });
          return;
        }
        // Anthropic's rule (and chat's, whose tool message answers a call): a result answers a tool use
        if (!toolUses.has(block.tool_use_id))
          issues.push({
            field: `${where}.tool_use_id`,
            message: 'is not the id of a tool_use in the assistant message just before it',
          });
        const { text, images, mark } = toolResultContent(block, where, issues);
        tools.push({ role: 'tool', tool_call_id: block.tool_use_id, content: text, ...marked(mark) });
        parts.push(...images);
        return;
      }
      default:
        issues.push({
          field: `${where}.type`,
          message: `'${String(block.type)}' is not supported in a user message: text, image or tool_result`,
        });
    }
  });
  messages.push(...tools);
  if (parts.length === 0) return;
  // one text part is a string, as chat clients send it (every provider takes that), its breakpoint the message's
  const only = parts.length === 1 && parts[0]!.type === 'text' ? parts[0]! : null;
  messages.push(
    only
      ? { role: 'user', content: only.text, ...marked(only.cache_control as Json | undefined) }
      : { role: 'user', content: parts },
  );
}

/**
 * One assistant turn: its text, its tool uses as chat's tool calls, and its thinking as the message's
 * `thinking_blocks` (signed by Anthropic: sent back as they came to an Anthropic model, dropped for any other).
 */
function assistantTurn(
  content: unknown,
  field: string,
  issues: Issue[],
  messages: Json[],
  toolUses: Set<string>,
): void {
  if (typeof content === 'string') {
    messages.push({ role: 'assistant', content });
    return;
  }
  let text = '';
  const calls: Json[] = [];
  const thinking: Json[] = [];
  // chat's assistant message carries one breakpoint, after its last block (its text or last tool call)
  let mark: Json | undefined;
  (content as unknown[]).forEach((block, i) => {
    const where = `${field}.${i}`;
    if (!isObject(block)) {
      issues.push({ field: where, message: 'a content block must be an object with a type' });
      return;
    }
    if (block.type === 'text' || block.type === 'tool_use') mark = breakpointOf(block, where, issues) ?? mark;
    switch (block.type) {
      case 'text':
        if (typeof block.text === 'string') text += block.text;
        return;
      case 'tool_use':
        if (typeof block.id !== 'string' || block.id === '' || typeof block.name !== 'string') {
          issues.push({ field: where, message: 'a tool_use needs its id and name' });
          return;
        }
        toolUses.add(block.id);
        calls.push({
          id: block.id,
          type: 'function',
          function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        });
        return;
      case 'thinking':
        if (typeof block.thinking !== 'string' || typeof block.signature !== 'string')
          issues.push({ field: where, message: 'a thinking block needs its thinking and signature' });
        // unsigned: the gateway's own, from a model that is not Anthropic's (nothing any model could check)
        else if (block.signature !== '')
          thinking.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
        return;
      case 'redacted_thinking':
        if (typeof block.data === 'string') thinking.push({ type: 'redacted_thinking', data: block.data });
        else issues.push({ field: `${where}.data`, message: 'a redacted_thinking block needs its data' });
        return;
      default:
        issues.push({
          field: `${where}.type`,
          message: `'${String(block.type)}' is not supported in an assistant message: text, tool_use or thinking`,
        });
    }
  });
  if (text === '' && calls.length === 0) return;
  messages.push({
    role: 'assistant',
    content: text === '' ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(thinking.length > 0 ? { thinking_blocks: thinking } : {}),
    ...marked(mark),
  });
}

/**
 * `system`: a string, or text blocks joined by a blank line as the Anthropic adapter joins system messages. With
 * breakpoints, one system message per stretch of blocks ending at one: the adapter joins them alike and cuts its
 * system blocks at the same places, so an Anthropic model reads the same text with its breakpoints.
 */
function systemMessages(system: unknown, issues: Issue[]): Json[] {
  if (typeof system === 'string') return system === '' ? [] : [{ role: 'system', content: system }];
  if (!Array.isArray(system)) return [];
  const out: Json[] = [];
  let texts: string[] = [];
  system.forEach((block, i) => {
    if (!(isObject(block) && block.type === 'text' && typeof block.text === 'string')) {
      issues.push({ field: `system.${i}`, message: 'the system prompt holds text blocks' });
      return;
    }
    if (block.text !== '') texts.push(block.text);
    const mark = breakpointOf(block, `system.${i}`, issues);
    if (!mark) return;
    if (texts.length > 0) out.push({ role: 'system', content: texts.join('\n\n'), cache_control: mark });
    else if (out.length > 0) out[out.length - 1]!.cache_control = mark;
    texts = [];
  });
  if (texts.length > 0) out.push({ role: 'system', content: texts.join('\n\n') });
  return out;
}

const chatTool = (tool: Json, i: number, issues: Issue[]): Json => ({
  type: 'function',
  function: {
    name: tool.name,
    ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
    parameters: isObject(tool.input_schema) ? tool.input_schema : { type: 'object', properties: {} },
  },
  ...marked(breakpointOf(tool, `tools.${i}`, issues)),
});

/** `tool_choice` in chat's terms: auto, required (any), none, or one function. */
function chatToolChoice(choice: Json): unknown {
  switch (choice.type) {
    case 'any':
      return 'required';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
    case 'none':
      return 'none';
    default:
      return 'auto';
  }
}

/** Structured outputs (`output_config.format` or the older `output_format`) as chat's `response_format`. */
function responseFormat(body: Json, issues: Issue[]): Json | undefined {
  const config = isObject(body.output_config) ? body.output_config : {};
  const format = config.format ?? body.output_format;
  if (format === undefined || format === null) return undefined;
  if (isObject(format) && format.type === 'json_schema' && isObject(format.schema))
    return { type: 'json_schema', json_schema: { name: 'output', schema: format.schema } };
  issues.push({
    field: body.output_format !== undefined ? 'output_format' : 'output_config.format',
    message: "a structured output format is {type: 'json_schema', schema}",
  });
  return undefined;
}

/**
 * A Messages request checked by the route's schema -> the chat request the gateway serves. Turns become chat
 * messages in order (a system message first); blocks chat cannot carry are refused (400 INVALID_BODY naming each).
 * `count_tokens` translates its body alike (without `max_tokens`) to count what would be sent.
 */
export function chatRequestOfMessages(body: Json): ChatRequest {
  const issues: Issue[] = [];
  const messages: Json[] = systemMessages(body.system, issues);
  const turns = body.messages as Json[];
  // the ids of the tool uses a tool_result may answer: those of the assistant turn just before it (Anthropic's rule,
  // and chat's, whose tool messages answer the calls of the assistant message before them)
  let toolUses = new Set<string>();
  turns.forEach((message, i) => {
    const field = `messages.${i}.content`;
    // Anthropic's rule: every message says something, but a last assistant turn (a prefill to continue)
    if (
      Array.isArray(message.content) &&
      message.content.length === 0 &&
      !(message.role === 'assistant' && i === turns.length - 1)
    )
      issues.push({
        field,
        message: 'at least one content block (only a last assistant message may be empty)',
      });
    if (message.role === 'assistant') {
      if (turns[i - 1]?.role !== 'assistant') toolUses = new Set();
      assistantTurn(message.content, field, issues, messages, toolUses);
    } else {
      userTurn(message.content, field, issues, messages, toolUses);
      // a user turn of tool results alone goes on with the next one (Anthropic joins them): any other ends the answers
      if (!onlyToolResults(message.content)) toolUses = new Set();
    }
  });
  if (issues.length === 0 && messages.every((m) => m.role === 'system'))
    issues.push({
      field: 'messages',
      message: 'hold nothing the model reads: a text, an image or a tool use',
    });
  const format = responseFormat(body, issues);
  const tools = ((body.tools as Json[] | undefined) ?? []).map((tool, i) => chatTool(tool, i, issues));
  // Anthropic's rule ("Tool names must be unique"), whichever provider the model is on
  const names = new Set<unknown>();
  tools.forEach((tool, i) => {
    const name = (tool.function as Json).name;
    if (names.has(name)) issues.push({ field: `tools.${i}.name`, message: 'is the name of an earlier tool' });
    names.add(name);
  });
  // a tool_choice no tool answers, which every provider refuses (Anthropic's refusal was a 502 that did not say why)
  const chosen = body.tool_choice as Json | undefined;
  if (chosen?.type === 'any' && tools.length === 0)
    issues.push({ field: 'tool_choice', message: "'any' needs tools" });
  if (chosen?.type === 'tool' && !names.has(chosen.name))
    issues.push({ field: 'tool_choice.name', message: `no tool named ${String(chosen.name)} in tools` });
  // automatic caching: Anthropic puts the request's breakpoint on its last block, as chat's last message's does
  const automatic = breakpointOf(body, '', issues);
  const last = messages[messages.length - 1];
  if (automatic && last && last.cache_control === undefined) last.cache_control = automatic;
  const excess = excessBreakpoint(body);
  if (excess) issues.push({ field: excess, message: tooManyBreakpoints });
  if (issues.length > 0) refuse(issues);

  const chat: ChatRequest = { messages };
  const set = (key: string, value: unknown) => {
    if (value !== undefined && value !== null) chat[key] = value;
  };
  set('model', body.model);
  if (body.stream === true) chat.stream = true;
  set('max_completion_tokens', body.max_tokens);
  const choice = body.tool_choice as Json | undefined;
  if (tools.length > 0) {
    chat.tools = tools;
    if (choice) chat.tool_choice = chatToolChoice(choice);
    if (choice?.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
  }
  const stops = body.stop_sequences as string[] | undefined;
  if (stops && stops.length > 0) chat.stop = stops;
  set('temperature', body.temperature);
  set('top_p', body.top_p);
  set('user', (body.metadata as { user_id?: unknown } | undefined)?.user_id);
  set('response_format', format);
  // `{type: 'enabled', budget_tokens}`, `{type: 'disabled'}`…: for an Anthropic model, as it came (decision 0114)
  set('thinking', body.thinking);
  return chat;
}
