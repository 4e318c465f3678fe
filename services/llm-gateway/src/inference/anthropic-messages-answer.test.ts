import { APIError } from '@anthropic-ai/sdk';
import { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import {
  toolCallChunk as call,
  finishChunk as finish,
  textChunk as text,
} from '../../test/provider-fixtures';
import {
  anthropicError,
  type MessageBase,
  MessagesEventWriter,
  messageOfCompletion,
  messageUsage,
} from './anthropic-messages-answer';
import type { ChatChunk } from './provider-port';

const BASE: MessageBase = { id: 'msg_test', model: 'sim/gpt', thinking: false };
const FIGURES = { cost: 0.5, costMicros: 500_000, durationMs: 12, carbon: null };
const USAGE = messageUsage({ prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 }, FIGURES);

/**
 * The writer's events as the SDK reads them off the wire: a server-sent event stream fed to `MessageStream`, which
 * assembles the message as `messages.stream(...).finalMessage()` does (and raises an `error` event).
 */
function assemble(feed: (writer: MessagesEventWriter) => void, base = BASE) {
  const frames: string[] = [];
  const types: string[] = [];
  const writer = new MessagesEventWriter(base, (type, event) => {
    types.push(type);
    frames.push(`event: ${type}\ndata: ${JSON.stringify(event)}\n\n`);
  });
  writer.start();
  feed(writer);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(frames.join('')));
      controller.close();
    },
  });
  return { types, final: MessageStream.fromReadableStream(sseToJsonLines(body)).finalMessage() };
}

/**
 * `fromReadableStream` takes newline-delimited JSON events (what `toReadableStream` writes): the frames' data, and
 * an `error` event thrown as the SDK's server-sent-event reader throws it.
 */
function sseToJsonLines(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    async start(controller) {
      const text = await new Response(body).text();
      for (const frame of text.split('\n\n').filter(Boolean)) {
        const event = /^event: (.*)$/m.exec(frame)![1]!;
        const data = /^data: (.*)$/m.exec(frame)![1]!;
        if (event === 'error') {
          const parsed = JSON.parse(data);
          controller.error(new APIError(undefined, parsed, undefined, undefined, parsed.error.type));
          return;
        }
        controller.enqueue(encoder.encode(`${data}\n`));
      }
      controller.close();
    },
  });
}

describe("Anthropic's Messages answer from chat", () => {
  it('a plain completion: text and tool_use blocks, the stop reason, usage with the cache apart', () => {
    const message = messageOfCompletion(
      BASE,
      {
        choices: [
          {
            message: {
              role: 'assistant',
              content: 'Let me look.',
              tool_calls: [
                {
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
                },
                { id: '', type: 'function', function: { name: 'broken', arguments: 'not json' } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      },
      messageUsage(
        {
          prompt_tokens: 100,
          completion_tokens: 5,
          total_tokens: 105,
          prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 30 },
        },
        FIGURES,
      ),
    );
    expect(message).toEqual({
      id: 'msg_test',
      type: 'message',
      role: 'assistant',
      model: 'sim/gpt',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
        { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'broken', input: {} },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 10,
        output_tokens: 5,
        cache_read_input_tokens: 60,
        cache_creation_input_tokens: 30,
        cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 0 },
        cost: 0.5,
        duration_ms: 12,
        carbon: null,
      },
    });
    const empty = messageOfCompletion(
      BASE,
      { choices: [{ message: { content: '' }, finish_reason: 'length' }] },
      USAGE,
    );
    expect(empty).toMatchObject({ content: [{ type: 'text', text: '' }], stop_reason: 'max_tokens' });
  });

  it("streams text then tool calls as blocks the SDK's MessageStream assembles", async () => {
    const { types, final } = assemble((writer) => {
      writer.chunk({ choices: [{ delta: { role: 'assistant', content: '' } as never }] });
      writer.chunk(text('Checking '));
      writer.chunk(text('both.'));
      writer.chunk(call(0, { id: 'call_a', name: 'get_weather', arguments: '{"ci' }));
      writer.chunk(call(0, { arguments: 'ty":"Oslo"}' }));
      writer.chunk(call(1, { id: 'call_b', name: 'get_time', arguments: '{}' }));
      writer.chunk(finish('tool_calls'));
      writer.finish(USAGE);
    });
    expect(await final).toMatchObject({
      id: 'msg_test',
      model: 'sim/gpt',
      content: [
        { type: 'text', text: 'Checking both.' },
        { type: 'tool_use', id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } },
        { type: 'tool_use', id: 'call_b', name: 'get_time', input: {} },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, output_tokens: 4 },
    });
    expect(types).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it("names the stop sequence a provider says ended the answer, when it is one of the request's", async () => {
    const ended = (sequence: unknown, base: MessageBase) =>
      messageOfCompletion(
        base,
        {
          choices: [
            {
              message: { role: 'assistant', content: 'Paris. ' },
              finish_reason: 'stop',
              stop_reason: sequence,
            },
          ],
        },
        USAGE,
      );
    const asked = { ...BASE, stopSequences: ['END', 'STOP'] };
    expect(ended('END', asked)).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    // a provider's own word for its stop (a proxy's `stop_reason: "end_turn"`), or vLLM's EOS token id: no sequence
    for (const sequence of ['end_turn', 2, null])
      expect(ended(sequence, asked)).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    expect(ended('END', BASE)).toMatchObject({ stop_reason: 'end_turn', stop_sequence: null });
    const streamed = assemble((writer) => {
      writer.chunk({ choices: [{ delta: { content: 'Paris. ' } }] } as never);
      writer.chunk({ choices: [{ delta: {}, finish_reason: 'stop', stop_reason: 'STOP' }] } as never);
      writer.finish(USAGE);
    }, asked);
    expect(await streamed.final).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
  });

  it('an answer with nothing in it is one empty text block; a refusal is text; length is max_tokens', async () => {
    const empty = assemble((writer) => {
      writer.chunk(finish('stop'));
      writer.finish(USAGE);
    });
    expect(await empty.final).toMatchObject({
      content: [{ type: 'text', text: '' }],
      stop_reason: 'end_turn',
    });
    const refused = assemble((writer) => {
      writer.chunk({
        choices: [{ delta: { refusal: 'I cannot.' } as never, finish_reason: 'content_filter' }],
      });
      writer.finish(USAGE);
    });
    expect(await refused.final).toMatchObject({
      content: [{ type: 'text', text: 'I cannot.' }],
      stop_reason: 'refusal',
    });
    const cut = assemble((writer) => {
      writer.chunk(text('a', 'length'));
      writer.finish(USAGE);
    });
    expect((await cut.final).stop_reason).toBe('max_tokens');
  });

  it("a reasoning model's thinking is a thinking block first when the request asked for thinking, else dropped", async () => {
    const thinkingChunk = (reasoning: string): ChatChunk => ({
      choices: [{ delta: { reasoning_content: reasoning } }],
    });
    const feed = (writer: MessagesEventWriter) => {
      writer.chunk(thinkingChunk('Paris is '));
      writer.chunk(thinkingChunk('in France.'));
      writer.chunk(text('Paris.', 'stop'));
      writer.finish(USAGE);
    };
    const asked = assemble(feed, { ...BASE, thinking: true });
    expect((await asked.final).content).toEqual([
      { type: 'thinking', thinking: 'Paris is in France.', signature: '' },
      { type: 'text', text: 'Paris.' },
    ]);
    expect((await assemble(feed).final).content).toEqual([{ type: 'text', text: 'Paris.' }]);
    // thinking alone is no answer: an empty text block follows it
    const thoughtOnly = assemble(
      (writer) => {
        writer.chunk(thinkingChunk('hmm'));
        writer.finish(USAGE);
      },
      { ...BASE, thinking: true },
    );
    expect((await thoughtOnly.final).content.map((b) => b.type)).toEqual(['thinking', 'text']);

    const completion = {
      choices: [
        { message: { content: 'Paris.', reasoning_content: 'Paris is in France.' }, finish_reason: 'stop' },
      ],
    };
    expect(messageOfCompletion({ ...BASE, thinking: true }, completion, USAGE).content).toEqual([
      { type: 'thinking', thinking: 'Paris is in France.', signature: '' },
      { type: 'text', text: 'Paris.' },
    ]);
    expect(messageOfCompletion(BASE, completion, USAGE).content).toEqual([{ type: 'text', text: 'Paris.' }]);
  });

  it('a cut stream ends with an error event the SDK raises, carrying the envelope as its details', async () => {
    const envelope = {
      error: 'MONTHLY_QUOTA_EXCEEDED',
      code: 'MONTHLY_QUOTA_EXCEEDED',
      message: "The organization's monthly token budget was reached during this stream",
      status: 429,
      details: { key: 'llm.monthly_tokens', limit: 400 },
      requestId: 'req-1',
    };
    const { types, final } = assemble((writer) => {
      writer.chunk(text('partial'));
      writer.fail(envelope);
    });
    const err = await final.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(err).toMatchObject({
      type: 'rate_limit_error',
      errorCode: 'MONTHLY_QUOTA_EXCEEDED',
      details: { key: 'llm.monthly_tokens', limit: 400 },
    });
    expect(types.at(-1)).toBe('error');
    expect(anthropicError(envelope)).toEqual({
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: envelope.message,
        details: { error_code: 'MONTHLY_QUOTA_EXCEEDED', key: 'llm.monthly_tokens', limit: 400 },
      },
      request_id: 'req-1',
    });
    expect(
      anthropicError({ error: 'PROVIDER_ERROR', message: 'x', status: 502, provider: 'sim', details: {} }),
    ).toMatchObject({
      error: { type: 'api_error', details: { error_code: 'PROVIDER_ERROR', provider: 'sim' } },
    });
  });
});
