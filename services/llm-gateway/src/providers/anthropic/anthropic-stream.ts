import type { ProviderHttp, ProviderRequest } from '../http/provider-http';
import { invalidAnswer, sendForEvents } from '../http/provider-http';
import {
  type ChatCompletionChunk,
  incompleteStream,
  type ProviderCall,
  ProviderError,
  streamFailure,
} from '../types';
import {
  answerFinishReason,
  JSON_RESPONSE_TOOL,
  stopSequenceOf,
  usageFromAnthropic,
} from './anthropic-translate';
import type { AnthropicUsage } from './anthropic-wire';

type Delta = ChatCompletionChunk['choices'][number]['delta'];

interface StreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: AnthropicUsage };
  content_block?: {
    type?: string;
    id?: string;
    name?: string;
    text?: string;
    input?: unknown;
    thinking?: string;
    signature?: string;
    data?: string;
  };
  delta?: {
    type?: string;
    text?: string;
    partial_json?: string;
    thinking?: string;
    signature?: string;
    stop_reason?: string | null;
    stop_sequence?: string | null;
  };
  usage?: AnthropicUsage;
  error?: { type?: string; message?: string };
}

/** the members of a usage report (or of its writes' split by TTL) that carry a figure */
const reported = <T extends object>(usage: T | null | undefined): Partial<T> =>
  Object.fromEntries(
    Object.entries(usage ?? {}).filter(([, v]) => v !== null && v !== undefined),
  ) as Partial<T>;

const isMessageStop = (e: { event: string; data: string }) =>
  e.event === 'message_stop' || e.data.startsWith('{"type":"message_stop"');

/** Errors Anthropic says a retry may cure. */
const TRANSIENT = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

/**
 * Anthropic's stream events translated one by one into OpenAI chunks: text deltas to `content`,
 * `tool_use` blocks and their `input_json_delta` to indexed `tool_calls` deltas, `message_delta`'s
 * stop reason to `finish_reason`, and the usage (input from `message_start`, output from
 * `message_delta`) to a final usage chunk, right after the stop reason when `message_delta` reports the output (the
 * message is whole then, whether or not `message_stop` comes). Thinking (decision 0114) streams as
 * `reasoning_content` deltas, and each thinking block, once whole and signed, as a delta of `thinking_blocks` holding
 * it (a redacted one as it starts), which the client sends back on the assistant message. The role rides on the first
 * chunk that says something, so a failure before any content leaves nothing sent (the gateway may still fail over).
 * For a JSON answer (`json`), the JSON tool's `input_json_delta`s are the `content` and nothing else is.
 */
export async function* anthropicChunks(
  http: ProviderHttp,
  call: ProviderCall,
  request: ProviderRequest,
  created: number,
  json = false,
): AsyncGenerator<ChatCompletionChunk> {
  let id = '';
  let model = call.model;
  let usage: AnthropicUsage = {};
  let stopped = false;
  // message_delta's stop reason: a message_stop without it ended a message that never finished (a proxy's cut); with
  // it, the message is whole even if the body ends before message_stop (gateways translating another protocol)
  let finished = false;
  // message_delta reported the output (message_start's figure is a placeholder): all of it, hidden thinking included
  let outputReported = false;
  // the usage chunk went out with the stop reason (message_delta reported the output): message_stop adds nothing
  let usageSent = false;
  let rolePending = true;
  let yielded = false;
  const toolIndexByBlock = new Map<number, number>();
  /** tool blocks whose input has not streamed yet: their input as `content_block_start` gave it */
  const unstreamedInput = new Map<number, unknown>();
  let jsonBlock: number | null = null;
  /** thinking blocks being streamed, by block index: their text and signature so far */
  const thinking = new Map<number, { thinking: string; signature: string }>();

  const chunk = (
    delta: Delta,
    finish: ChatCompletionChunk['choices'][number]['finish_reason'] = null,
    stopped: { stop_reason?: string } = {},
  ) => {
    const withRole = rolePending ? { role: 'assistant' as const, ...delta } : delta;
    rolePending = false;
    yielded = true;
    return {
      id,
      object: 'chat.completion.chunk' as const,
      created,
      model,
      choices: [{ index: 0, delta: withRole, finish_reason: finish, ...stopped, logprobs: null }],
    };
  };

  // the input message_start reports is consumed from then on, whatever follows; the output once message_delta reports
  // it (until then, the flow counts the output sent)
  const consumed = () =>
    typeof usage.input_tokens === 'number'
      ? usageFromAnthropic({ ...usage, output_tokens: outputReported ? usage.output_tokens : 0 })
      : null;
  try {
    for await (const sse of sendForEvents(http, call, request, isMessageStop)) {
      let event: StreamEvent;
      try {
        event = JSON.parse(sse.data) as StreamEvent;
      } catch {
        throw invalidAnswer(http, call, 'a stream event that is not JSON');
      }
      switch (event.type ?? sse.event) {
        case 'message_start':
          id = event.message?.id ?? id;
          model = event.message?.model ?? model;
          usage = { ...event.message?.usage };
          break;
        case 'content_block_start':
          if (json) {
            if (event.content_block?.type === 'tool_use' && event.content_block.name === JSON_RESPONSE_TOOL)
              jsonBlock = event.index ?? 0;
          } else if (event.content_block?.type === 'tool_use') {
            const index = toolIndexByBlock.size;
            toolIndexByBlock.set(event.index ?? 0, index);
            unstreamedInput.set(event.index ?? 0, event.content_block.input);
            yield chunk({
              tool_calls: [
                {
                  index,
                  id: event.content_block.id,
                  type: 'function',
                  function: { name: event.content_block.name, arguments: '' },
                },
              ],
            });
          } else if (event.content_block?.type === 'text' && event.content_block.text) {
            yield chunk({ content: event.content_block.text });
          } else if (event.content_block?.type === 'thinking') {
            const text = event.content_block.thinking ?? '';
            thinking.set(event.index ?? 0, {
              thinking: text,
              signature: event.content_block.signature ?? '',
            });
            if (text) yield chunk({ reasoning_content: text });
          } else if (event.content_block?.type === 'redacted_thinking') {
            const data = event.content_block.data ?? '';
            yield chunk({ thinking_blocks: [{ type: 'redacted_thinking', data }] });
          }
          break;
        case 'content_block_delta':
          if (json) {
            if ((event.index ?? 0) === jsonBlock && event.delta?.partial_json)
              yield chunk({ content: event.delta.partial_json });
            break;
          }
          if (event.delta?.type === 'text_delta' && event.delta.text)
            yield chunk({ content: event.delta.text });
          if (event.delta?.type === 'thinking_delta' && event.delta.thinking) {
            const block = thinking.get(event.index ?? 0);
            if (block) block.thinking += event.delta.thinking;
            yield chunk({ reasoning_content: event.delta.thinking });
          }
          if (event.delta?.type === 'signature_delta' && event.delta.signature) {
            const block = thinking.get(event.index ?? 0);
            if (block) block.signature += event.delta.signature;
          }
          if (event.delta?.type === 'input_json_delta' && event.delta.partial_json) {
            unstreamedInput.delete(event.index ?? 0);
            const index = toolIndexByBlock.get(event.index ?? 0) ?? 0;
            yield chunk({ tool_calls: [{ index, function: { arguments: event.delta.partial_json } }] });
          }
          break;
        case 'content_block_stop': {
          // a tool without parameters streams no input at all (or only an empty partial_json): its arguments are
          // still JSON, `{}`, as the plain answer's and OpenAI's are, or a client's JSON.parse fails on ''
          const block = event.index ?? 0;
          const thought = thinking.get(block);
          if (thought) {
            thinking.delete(block);
            yield chunk({ thinking_blocks: [{ type: 'thinking', ...thought }] });
          }
          if (unstreamedInput.has(block)) {
            const input = unstreamedInput.get(block);
            unstreamedInput.delete(block);
            const index = toolIndexByBlock.get(block) ?? 0;
            yield chunk({ tool_calls: [{ index, function: { arguments: JSON.stringify(input ?? {}) } }] });
          }
          break;
        }
        case 'message_delta': {
          // message_delta's usage is cumulative; newer answers repeat the input and cache figures there too,
          // null where they have none to give: a null never replaces message_start's figure (nor, inside the
          // writes' split by TTL, one of its figures)
          const byTtl = usage.cache_creation;
          usage = { ...usage, ...reported(event.usage) };
          outputReported ||= typeof event.usage?.output_tokens === 'number';
          if (event.usage?.cache_creation)
            usage.cache_creation = { ...byTtl, ...reported(event.usage.cache_creation) };
          const stop = event.delta?.stop_reason;
          if (stop) {
            finished = true;
            yield chunk({}, answerFinishReason(stop, json), stopSequenceOf(stop, event.delta?.stop_sequence));
            // the message is whole: its usage now, so that a stream stalling before message_stop ends whole too
            const figures = outputReported && usageFromAnthropic(usage);
            if (figures) {
              usageSent = true;
              yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: figures };
            }
          }
          break;
        }
        case 'message_stop':
          stopped = true;
          break;
        case 'error': {
          const type = event.error?.type ?? 'stream_error';
          throw new ProviderError({
            provider: http.provider,
            model: call.model,
            upstreamStatus: null,
            providerErrorType: type,
            retryable: !yielded && TRANSIENT.has(type),
            message: event.error?.message ?? 'the provider reported an error in the stream',
          });
        }
        default:
          break; // ping: nothing to say in OpenAI's terms
      }
      if (stopped) break;
    }
    if (!finished) {
      throw incompleteStream(
        http.provider,
        call.model,
        yielded,
        stopped ? 'the message stopped without its stop reason' : 'the stream ended before its stop reason',
      );
    }
  } catch (err) {
    throw streamFailure(err, consumed(), yielded);
  }
  const figures = !usageSent && usageFromAnthropic(usage);
  if (figures) yield { id, object: 'chat.completion.chunk', created, model, choices: [], usage: figures };
}
