import { anthropicErrorBody, type SimulatedAnswer, SimulatedProviderError, sseEvent } from './answers';
import { argumentPieces, decideTurn } from './chat-script';
import {
  countSimulatorTokens,
  SIMULATOR_IMAGE_TOKENS,
  SIMULATOR_MESSAGE_OVERHEAD,
  streamPieces,
} from './content';
import type { ExchangeContext } from './openai';
import { breakpointsOf } from './prompt-cache';
import {
  checkThinkingBlock,
  checkToolLoopThinking,
  type SimulatedThinking,
  simulatedThinking,
  thinkingEnabled,
} from './thinking';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string): never {
  throw new SimulatedProviderError(400, 'invalid_request_error', message);
}

function blocks(content: unknown): Json[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

function blockText(content: unknown): string {
  return blocks(content)
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text))
    .join(' ');
}

/** The simulator's input-token count of an Anthropic Messages request. */
export function anthropicInputTokens(body: {
  system?: unknown;
  messages: unknown[];
  tools?: unknown[];
}): number {
  let total = SIMULATOR_MESSAGE_OVERHEAD + countSimulatorTokens(blockText(body.system ?? ''));
  for (const message of body.messages) {
    if (!isObject(message)) continue;
    total += SIMULATOR_MESSAGE_OVERHEAD;
    for (const block of blocks(message.content)) {
      if (block.type === 'text') total += countSimulatorTokens(String(block.text));
      if (block.type === 'image') total += SIMULATOR_IMAGE_TOKENS;
      if (block.type === 'tool_use')
        total += countSimulatorTokens(`${block.name} ${JSON.stringify(block.input ?? {})}`);
      if (block.type === 'tool_result') total += countSimulatorTokens(blockText(block.content));
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0)
    total += countSimulatorTokens(JSON.stringify(body.tools));
  return total;
}

const BLOCK_TYPES = ['text', 'image', 'tool_use', 'tool_result', 'document', 'thinking', 'redacted_thinking'];

/** Refuses what the real API refuses, so a wrong translation fails loudly in tests. */
function validate(body: Json): { messages: Json[]; thinking: boolean } {
  if (typeof body.model !== 'string' || !body.model) bad('model: Field required');
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1)
    bad('max_tokens: Field required');
  const thinking = thinkingEnabled(body);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) bad('messages: at least one message is required');
  /** the tool uses of the message before, which this one must answer */
  let unanswered: string[] = [];
  for (const [i, message] of messages.entries()) {
    if (!isObject(message) || (message.role !== 'user' && message.role !== 'assistant'))
      bad(
        `messages: Unexpected role. The roles are "user" and "assistant"; use the top-level "system" field`,
      );
    const content = blocks(message.content);
    const results = content.filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id));
    const missing = unanswered.filter((id) => !results.includes(id));
    if (missing.length > 0)
      bad(
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    // the results open the message, each answering a tool use of the message before
    const leading = content.findIndex((b) => b.type !== 'tool_result');
    if (leading !== -1 && leading < unanswered.length)
      bad(
        `messages.${i}: Did not find ${unanswered.length - leading} tool_result block(s) at the beginning of this message. Messages following tool_use blocks must begin with a matching number of tool_result blocks.`,
      );
    const unexpected = results.filter((id) => !unanswered.includes(id));
    if (unexpected.length > 0)
      bad(
        `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
      );
    unanswered = content.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    for (const [j, block] of blocks(message.content).entries()) {
      if (!BLOCK_TYPES.includes(String(block.type)))
        bad(`messages: unknown content block type '${String(block.type)}'`);
      if (block.type === 'thinking' || block.type === 'redacted_thinking')
        checkThinkingBlock(block, message.role, `messages.${i}.content.${j}`);
      if (block.type === 'image') {
        const source = isObject(block.source) ? block.source : {};
        const ok =
          (source.type === 'base64' &&
            typeof source.media_type === 'string' &&
            typeof source.data === 'string') ||
          (source.type === 'url' && typeof source.url === 'string');
        if (!ok) bad('messages: image source must be base64 (media_type, data) or url');
      }
      if (block.type === 'tool_use' && message.role !== 'assistant')
        bad('messages: tool_use blocks belong to assistant turns');
    }
  }
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
    bad('system: must be a string or an array of text blocks');
  for (const block of Array.isArray(body.system) ? body.system : [])
    if (!isObject(block) || block.type !== 'text' || typeof block.text !== 'string' || block.text === '')
      bad('system: text content blocks must be non-empty');
  // the cache breakpoints' shapes, number and order
  breakpointsOf(body);
  const tools = Array.isArray(body.tools) ? body.tools : [];
  for (const tool of tools) {
    if (!isObject(tool) || typeof tool.name !== 'string' || !isObject(tool.input_schema))
      bad('tools: each tool needs a name and an input_schema');
  }
  const choice = body.tool_choice;
  if (isObject(choice) && choice.type === 'tool' && !tools.some((t) => isObject(t) && t.name === choice.name))
    bad(`tool_choice: the tool '${String(choice.name)}' is not among the tools`);
  if (thinking) checkToolLoopThinking(messages as Json[]);
  return { messages: messages as Json[], thinking };
}

const stopReason = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'tool_use' } as const;

export function anthropicMessages(body: Json, ctx: ExchangeContext): SimulatedAnswer {
  const { messages, thinking: thinks } = validate(body);
  const tools = (Array.isArray(body.tools) ? (body.tools as Json[]) : []).map((t) => ({
    name: String(t.name),
    parameters: t.input_schema,
  }));
  const choice = isObject(body.tool_choice) ? body.tool_choice : { type: 'auto' };
  const toolChoice =
    choice.type === 'tool' ? String(choice.name) : choice.type === 'any' ? 'required' : String(choice.type);
  const last = messages[messages.length - 1]!;
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const thinking: SimulatedThinking | null = thinks
    ? simulatedThinking(blockText(lastUser?.content), ctx.rule.reply?.redactedThinking === true)
    : null;
  const turn = decideTurn(
    {
      lastUserText: blockText(lastUser?.content),
      userSpokeLast: last.role === 'user' && !blocks(last.content).some((b) => b.type === 'tool_result'),
      tools,
      toolChoice,
      // the thinking is spent out of max_tokens, as Anthropic spends it
      maxTokens: (body.max_tokens as number) - (thinking?.tokens ?? 0),
      stop: Array.isArray(body.stop_sequences) ? (body.stop_sequences as string[]) : undefined,
    },
    ctx.rule,
  );
  const scripted = ctx.rule.reply?.usage ?? {};
  // Anthropic bills thinking as output; scripted figures win
  const outputTokens =
    turn.completionTokens + (scripted.completion_tokens === undefined ? (thinking?.tokens ?? 0) : 0);
  const promptTokens = scripted.prompt_tokens ?? anthropicInputTokens(body as never);
  // scripted figures win; otherwise a request with breakpoints reads and writes the simulated prompt cache
  const cached =
    scripted.cached_tokens === undefined && scripted.cache_write_tokens === undefined
      ? ctx.promptCache?.use(body, (prefix) => anthropicInputTokens(prefix as never))
      : null;
  const cacheRead = scripted.cached_tokens ?? Math.min(cached?.read ?? 0, promptTokens);
  const cacheWrite = scripted.cache_write_tokens ?? Math.min(cached?.written ?? 0, promptTokens - cacheRead);
  const hourWrite = Math.min(scripted.cache_write_1h_tokens ?? cached?.writtenHour ?? 0, cacheWrite);
  const id = `msg_sim${ctx.seq}`;
  const toolUses = turn.toolCalls.map((call, i) => ({
    type: 'tool_use',
    id: `toolu_sim${ctx.seq}_${i}`,
    name: call.name,
    input: JSON.parse(call.arguments || '{}') as unknown,
    raw: call.arguments,
  }));
  const content = [
    ...(thinking ? [thinking.block] : []),
    ...(turn.text ? [{ type: 'text', text: turn.text }] : []),
    ...toolUses.map(({ raw: _raw, ...block }) => block),
  ];
  // Anthropic's input_tokens are those after the last cache breakpoint: the prompt less its cache reads and writes
  const usage = {
    input_tokens: Math.max(0, promptTokens - cacheRead - cacheWrite),
    output_tokens: outputTokens,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    // the writes by TTL, as Anthropic reports them beside their sum
    cache_creation: {
      ephemeral_5m_input_tokens: cacheWrite - hourWrite,
      ephemeral_1h_input_tokens: hourWrite,
    },
  };
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model: body.model,
    stop_reason: turn.stopSequence === undefined ? stopReason[turn.finish] : 'stop_sequence',
    stop_sequence: turn.stopSequence ?? null,
  };

  if (body.stream !== true) return { kind: 'json', body: { ...message, content, usage } };

  const frames = [
    sseEvent('message_start', {
      type: 'message_start',
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    }),
  ];
  let index = 0;
  if (thinking) {
    frames.push(...thinking.frames(index));
    index += 1;
  }
  if (turn.text) {
    frames.push(
      sseEvent('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '' },
      }),
    );
    frames.push(sseEvent('ping', { type: 'ping' }));
    for (const piece of streamPieces(turn.text))
      frames.push(
        sseEvent('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'text_delta', text: piece },
        }),
      );
    frames.push(sseEvent('content_block_stop', { type: 'content_block_stop', index }));
    index += 1;
  }
  for (const use of toolUses) {
    frames.push(
      sseEvent('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: use.id, name: use.name, input: {} },
      }),
    );
    for (const piece of argumentPieces(use.raw))
      frames.push(
        sseEvent('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: piece },
        }),
      );
    frames.push(sseEvent('content_block_stop', { type: 'content_block_stop', index }));
    index += 1;
  }
  frames.push(
    sseEvent('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence },
      usage: { output_tokens: outputTokens },
    }),
  );
  frames.push(sseEvent('message_stop', { type: 'message_stop' }));
  return {
    kind: 'sse',
    frames,
    errorFrame: (type, messageText) => sseEvent('error', anthropicErrorBody(type, messageText)),
  };
}
