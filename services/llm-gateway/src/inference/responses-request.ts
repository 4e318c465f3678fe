import { invalidBody } from './errors';
import type { ChatRequest } from './provider-port';
import { decodeThinking, ENCRYPTED_REASONING, type ThinkingBlock } from './responses-thinking';

/**
 * The Responses API request (OpenAI's `POST /v1/responses`) said in chat completions' terms, so that it takes
 * the gateway's own chat path (decision 0106). What the model needs comes in `input`, after the items of the
 * stored responses `previous_response_id` continues (decision 0108) or of the `conversation` (decision 0110);
 * what would need a server-side tool, a prompt template or a background run is refused with a 400 naming the
 * field.
 */

type Json = Record<string, unknown>;
type Issue = { field: string; message: string };

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** What the answer repeats of the request (OpenAI's response object echoes its parameters). */
export interface ResponseEcho {
  instructions: string | null;
  metadata: Record<string, string> | null;
  max_output_tokens: number | null;
  parallel_tool_calls: boolean;
  temperature: number | null;
  top_p: number | null;
  tool_choice: unknown;
  tools: unknown[];
  text: { format: Json; verbosity?: string };
  reasoning: Json | null;
  user?: string;
  previous_response_id: string | null;
  /** whether the response is kept (OpenAI's default: true) */
  store: boolean;
}

const NO_REFERENCES =
  'stored items are not referenced one by one: continue a stored response with previous_response_id or a conversation, or send the items themselves in input';

/** Members that ask for what a stateless translation to chat cannot give; null (or false, []) is the default. */
const REFUSED: Record<string, (value: unknown) => string | null> = {
  background: (v) => (v == null || v === false ? null : 'is not supported: responses are answered at once'),
  prompt: (v) => (v == null ? null : 'is not supported: the gateway keeps no prompt templates'),
  // reasoning.encrypted_content (Codex CLI and the Agents SDK send it with store: false) asks for the reasoning
  // item's encrypted_content: Claude's signed thinking blocks (`responses-thinking.ts`), read by the answer
  include: (v) => {
    const asked = Array.isArray(v) ? v.filter((x) => x !== ENCRYPTED_REASONING) : v == null ? [] : [v];
    return asked.length === 0
      ? null
      : `${JSON.stringify(asked[0])} is not supported: no log-probability or built-in tool content is answered`;
  },
  truncation: (v) =>
    v == null || v === 'disabled' ? null : "'auto' is not supported: the conversation is sent as it is",
  // accepted and ignored: the gateway never pads its events
  stream_options: () => null,
};

/** The members the schema checks and the translation reads (`ResponsesRequestSchema`). */
const READ = new Set([
  'model',
  'input',
  'instructions',
  'tools',
  'tool_choice',
  'temperature',
  'top_p',
  'max_output_tokens',
  'text',
  'parallel_tool_calls',
  'user',
  'metadata',
  'stream',
  'store',
  'previous_response_id',
  'conversation',
  'reasoning',
  'safety_identifier',
  'prompt_cache_key',
  'service_tier',
]);

const refuse = (issues: Issue[]): never => {
  throw invalidBody(
    `Not supported by the gateway's Responses API: ${issues.map((i) => `${i.field} ${i.message}`).join('; ')}`,
    issues,
  );
};

/**
 * The members of a Responses request the gateway does not serve, each named with why: checked before the
 * schema, so that a built-in tool is refused as such rather than as a function tool without a name.
 */
export function refuseUnsupported(body: unknown): void {
  if (!isObject(body)) return; // the schema says what is wrong with it
  const issues: Issue[] = [];
  // OpenAI's rule: the earlier items come from one of them
  if (body.conversation != null && body.previous_response_id != null)
    issues.push({
      field: 'conversation',
      message: 'cannot be used with previous_response_id: give one of them',
    });
  for (const [key, value] of Object.entries(body)) {
    // an own member only: `__proto__` or `constructor` in a body must not find Object's
    const why = Object.hasOwn(REFUSED, key) ? REFUSED[key] : undefined;
    if (why) {
      const message = why(value);
      if (message) issues.push({ field: key, message });
    } else if (!READ.has(key)) issues.push({ field: key, message: 'is not supported' });
  }
  if (Array.isArray(body.tools))
    body.tools.forEach((tool, i) => {
      if (isObject(tool) && typeof tool.type === 'string' && tool.type !== 'function')
        issues.push({
          field: `tools.${i}.type`,
          message: `'${tool.type}' is not supported: only function tools (the gateway runs no built-in tools)`,
        });
    });
  if (isObject(body.tool_choice) && body.tool_choice.type !== 'function')
    issues.push({
      field: 'tool_choice.type',
      message: `'${String(body.tool_choice.type)}' is not supported: 'none', 'auto', 'required' or a function`,
    });
  if (isObject(body.reasoning)) {
    for (const key of Object.keys(body.reasoning))
      if (!['effort', 'summary', 'generate_summary'].includes(key))
        issues.push({ field: `reasoning.${key}`, message: 'is not supported' });
  }
  if (issues.length > 0) refuse(issues);
}

/** A content part's text: `input_text` and `output_text` (a message written earlier by the model). */
const textOfPart = (part: Json): string | null =>
  (part.type === 'input_text' || part.type === 'output_text') && typeof part.text === 'string'
    ? part.text
    : null;

const IMAGE_DETAILS = new Set(['low', 'high', 'auto']);

function chatPart(part: unknown, field: string, issues: Issue[]): Json | null {
  if (!isObject(part)) {
    issues.push({ field, message: 'a content part must be an object with a type' });
    return null;
  }
  const text = textOfPart(part);
  if (text !== null) return { type: 'text', text };
  if (part.type === 'input_image') {
    if (typeof part.image_url !== 'string' || part.image_url === '') {
      issues.push({
        field,
        message: 'an input_image needs its image_url (a URL or a data URL): file_id is not supported',
      });
      return null;
    }
    const detail = typeof part.detail === 'string' && IMAGE_DETAILS.has(part.detail) ? part.detail : 'auto';
    return { type: 'image_url', image_url: { url: part.image_url, detail } };
  }
  issues.push({
    field: `${field}.type`,
    message: `'${String(part.type)}' is not supported: input_text, input_image or output_text`,
  });
  return null;
}

/** A message item's content: a string stays one; parts become chat parts (one text part, its text alone). */
function chatContent(role: string, content: unknown, field: string, issues: Issue[]): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) {
    issues.push({ field, message: 'content must be a string or an array of parts' });
    return '';
  }
  if (role === 'assistant') {
    // what the model said earlier: its text (a refusal is text it said too)
    return content
      .map((part, i) => {
        if (isObject(part) && part.type === 'refusal' && typeof part.refusal === 'string')
          return part.refusal;
        const text = isObject(part) ? textOfPart(part) : null;
        if (text === null)
          issues.push({
            field: `${field}.${i}`,
            message: 'an assistant message holds output_text (or refusal) parts',
          });
        return text ?? '';
      })
      .join('');
  }
  const parts = content.map((part, i) => chatPart(part, `${field}.${i}`, issues)).filter((p) => p !== null);
  return parts.length === 1 && parts[0]!.type === 'text' ? parts[0]!.text : parts;
}

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/** The conversation in chat's terms, as its items are read: the messages, and the function calls made so far. */
interface ChatConversation {
  messages: Json[];
  callIds: Set<string>;
  /** signed thinking read from reasoning items, for the assistant message the next items form */
  thinking: ThinkingBlock[];
}

const newConversation = (): ChatConversation => ({ messages: [], callIds: new Set(), thinking: [] });

/** The assistant message's share of the thinking read before it: its `thinking_blocks`, then none is pending. */
function takeThinking(into: ChatConversation, message: Json): void {
  if (into.thinking.length === 0) return;
  const held = Array.isArray(message.thinking_blocks) ? message.thinking_blocks : [];
  message.thinking_blocks = [...held, ...into.thinking];
  into.thinking = [];
}

/**
 * The items of `input` as chat messages, after those of `into`: function calls join the assistant's turn, their
 * outputs are tool messages, and a reasoning item's signed thinking (the gateway's `encrypted_content`) is the
 * `thinking_blocks` of the assistant message the items after it form. `where` names the items in an issue (`input`).
 */
function chatMessages(input: unknown, issues: Issue[], into: ChatConversation, where = 'input'): void {
  const { messages, callIds } = into;
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return;
  }
  (input as unknown[]).forEach((item, i) => {
    const field = `${where}.${i}`;
    if (!isObject(item)) {
      issues.push({ field, message: 'an input item must be an object' });
      return;
    }
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = String(item.role);
        if (!ROLES.has(role)) {
          issues.push({ field: `${field}.role`, message: 'user, assistant, system or developer' });
          return;
        }
        const message: Json = { role, content: chatContent(role, item.content, `${field}.content`, issues) };
        // thinking not followed by the model's own words has no turn to go with
        if (role === 'assistant') takeThinking(into, message);
        else into.thinking = [];
        messages.push(message);
        return;
      }
      case 'function_call': {
        if (typeof item.call_id !== 'string' || item.call_id === '' || typeof item.name !== 'string') {
          issues.push({ field, message: 'a function_call needs its call_id and name' });
          return;
        }
        // the JSON text of the arguments, as the model wrote it: anything else was sent as no arguments at all
        if (item.arguments !== undefined && typeof item.arguments !== 'string')
          issues.push({ field: `${field}.arguments`, message: 'the arguments as a JSON string' });
        callIds.add(item.call_id);
        const call = {
          id: item.call_id,
          type: 'function',
          function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '' },
        };
        // the calls of one turn are one assistant message, with the text said before them
        const last = messages[messages.length - 1];
        if (last?.role !== 'assistant') {
          const message: Json = { role: 'assistant', content: null, tool_calls: [call] };
          takeThinking(into, message);
          messages.push(message);
        } else {
          if (Array.isArray(last.tool_calls)) last.tool_calls.push(call);
          else last.tool_calls = [call];
          takeThinking(into, last);
        }
        return;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string' || !callIds.has(item.call_id)) {
          issues.push({
            field: `${field}.call_id`,
            message:
              'is not the call_id of a function_call before it in input, in the responses previous_response_id continues or in the conversation',
          });
          return;
        }
        into.thinking = [];
        messages.push({
          role: 'tool',
          tool_call_id: item.call_id,
          content: toolOutput(item.output, field, issues),
        });
        return;
      }
      // what the model thought on an earlier turn: Claude's signed thinking, which the gateway answered as
      // `encrypted_content`, goes back with the turn; the text alone, or another provider's encrypted reasoning,
      // has no place in chat
      case 'reasoning': {
        const blocks = decodeThinking(item.encrypted_content);
        if (Array.isArray(blocks)) into.thinking.push(...blocks);
        else if (blocks !== null)
          issues.push({ field: `${field}.encrypted_content`, message: blocks.malformed });
        return;
      }
      case 'item_reference':
        issues.push({
          field: `${field}.type`,
          message: `'item_reference' is not supported: ${NO_REFERENCES}`,
        });
        return;
      default:
        issues.push({
          field: `${field}.type`,
          message: `'${String(type)}' is not supported: message, function_call, function_call_output`,
        });
    }
  });
}

function toolOutput(output: unknown, field: string, issues: Issue[]): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output))
    return output
      .map((part, i) => {
        const text =
          isObject(part) && part.type === 'input_text' && typeof part.text === 'string' ? part.text : null;
        if (text === null)
          issues.push({ field: `${field}.output.${i}`, message: 'a function output holds input_text parts' });
        return text ?? '';
      })
      .join('');
  issues.push({ field: `${field}.output`, message: 'a string or input_text parts' });
  return '';
}

const chatTool = (tool: Json): Json => ({
  type: 'function',
  function: {
    name: tool.name,
    ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
    ...(isObject(tool.parameters) ? { parameters: tool.parameters } : {}),
    ...(typeof tool.strict === 'boolean' ? { strict: tool.strict } : {}),
  },
});

function chatResponseFormat(format: Json | undefined): Json | undefined {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const { type: _t, ...schema } = format;
  return { type: 'json_schema', json_schema: schema };
}

/**
 * What is wrong with `items` (a conversation's new items, named `where` in the issues) for a later turn to send
 * them in chat's terms, after `earlier` (the conversation's items, whose function calls their outputs may answer).
 */
export function inputItemIssues(
  items: readonly unknown[],
  where: string,
  earlier: readonly Json[] = [],
): Issue[] {
  const conversation = newConversation();
  // the earlier items were checked when they were added: only the calls they made matter here
  chatMessages(earlier, [], conversation);
  const issues: Issue[] = [];
  chatMessages(items, issues, conversation, where);
  return issues;
}

/**
 * A Responses request checked by `ResponsesRequestSchema` -> the chat request the gateway serves, and what the
 * answer echoes. `earlier` are the items of the stored chain `previous_response_id` continues or of the
 * `conversation` (every input and output item, oldest first; `earlierWhere` names them in an issue): they come
 * before `input`, and only this request's `instructions` are sent (OpenAI's rule). Input items it cannot say in
 * chat's terms are refused (400 INVALID_BODY naming each).
 */
export function toChatRequest(
  body: Json,
  earlier: readonly Json[] = [],
  earlierWhere = 'previous_response_id.items',
): { chat: ChatRequest; echo: ResponseEcho } {
  const issues: Issue[] = [];
  const tools = (body.tools as Json[] | undefined) ?? [];
  tools.forEach((tool, i) => {
    if (typeof tool.name !== 'string')
      issues.push({ field: `tools.${i}.name`, message: 'a function tool needs its name' });
  });
  const choice = body.tool_choice as string | Json | undefined;
  if (isObject(choice) && typeof choice.name !== 'string')
    issues.push({ field: 'tool_choice.name', message: 'a function tool_choice needs its name' });
  // a tool_choice no tool answers, which every provider refuses (Anthropic's refusal was a 502 that did not say why)
  else if (isObject(choice) && !tools.some((tool) => tool.name === choice.name))
    issues.push({ field: 'tool_choice.name', message: `no function tool named ${choice.name} in tools` });
  if (choice === 'required' && tools.length === 0)
    issues.push({ field: 'tool_choice', message: "'required' needs tools" });
  const conversation = newConversation();
  if (earlier.length > 0) chatMessages(earlier, issues, conversation, earlierWhere);
  chatMessages(body.input, issues, conversation);
  const { messages } = conversation;
  const instructed = typeof body.instructions === 'string' && body.instructions !== '';
  // reasoning items alone are not sent: a provider would refuse a request without messages (a 502 for a 400)
  if (issues.length === 0 && messages.length === 0 && !instructed)
    issues.push({
      field: 'input',
      message:
        'holds nothing the model reads: a message, a function_call or its output (reasoning items are not sent)',
    });
  if (issues.length > 0) refuse(issues);
  if (instructed) messages.unshift({ role: 'system', content: body.instructions });

  const text = body.text as { format?: Json; verbosity?: string | null } | undefined;
  const reasoning = body.reasoning as { effort?: string | null } | null | undefined;
  const chat: ChatRequest = { messages };
  const set = (key: string, value: unknown) => {
    if (value !== undefined && value !== null) chat[key] = value;
  };
  set('model', body.model);
  if (body.stream === true) chat.stream = true;
  if (tools.length > 0) {
    chat.tools = tools.map(chatTool);
    // OpenAI refuses parallel_tool_calls without tools
    set('parallel_tool_calls', body.parallel_tool_calls);
  }
  // 'auto' and 'none' say nothing without tools, and OpenAI's chat refuses a tool_choice without tools
  // (the Responses API takes it)
  if (tools.length > 0)
    set('tool_choice', isObject(choice) ? { type: 'function', function: { name: choice.name } } : choice);
  set('temperature', body.temperature);
  set('top_p', body.top_p);
  set('max_completion_tokens', body.max_output_tokens);
  set('response_format', chatResponseFormat(text?.format));
  set('verbosity', text?.verbosity);
  set('reasoning_effort', reasoning?.effort);
  set('user', body.user);
  set('safety_identifier', body.safety_identifier);
  set('prompt_cache_key', body.prompt_cache_key);
  set('service_tier', body.service_tier);

  const echo: ResponseEcho = {
    instructions: typeof body.instructions === 'string' ? body.instructions : null,
    metadata: (body.metadata as Record<string, string> | null | undefined) ?? null,
    max_output_tokens: (body.max_output_tokens as number | null | undefined) ?? null,
    parallel_tool_calls: body.parallel_tool_calls !== false,
    temperature: (body.temperature as number | null | undefined) ?? null,
    top_p: (body.top_p as number | null | undefined) ?? null,
    tool_choice: choice ?? 'auto',
    tools,
    text: {
      format: text?.format ?? { type: 'text' },
      ...(text?.verbosity ? { verbosity: text.verbosity } : {}),
    },
    reasoning: (body.reasoning as Json | null | undefined) ?? null,
    ...(typeof body.user === 'string' ? { user: body.user } : {}),
    previous_response_id: typeof body.previous_response_id === 'string' ? body.previous_response_id : null,
    store: body.store !== false,
  };
  return { chat, echo };
}
