import { APIError } from 'openai';
import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import {
  toolCallChunk as call,
  finishChunk as finish,
  textChunk as text,
} from '../../test/provider-fixtures';
import type { ChatChunk } from './provider-port';
import { fromChatCompletion, type ResponseBase, ResponsesEventWriter } from './responses-answer';
import { toChatRequest } from './responses-request';

const FIGURES_USAGE = { input_tokens: 5, output_tokens: 7, total_tokens: 12 };

function base(encryptedReasoning = false): ResponseBase {
  return {
    id: 'resp_test',
    createdAt: 1_700_000_000,
    model: 'mock/chat',
    echo: toChatRequest({ input: 'hi' }).echo,
    encryptedReasoning,
  };
}

/** The writer's events, fed to the SDK's own stream helper, which checks every item identity and index. */
async function assemble(feed: (writer: ResponsesEventWriter) => void, encryptedReasoning = false) {
  const sent: Array<Record<string, unknown>> = [];
  const writer = new ResponsesEventWriter(base(encryptedReasoning), (_type, event) =>
    sent.push(JSON.parse(JSON.stringify(event))),
  );
  writer.start();
  feed(writer);
  const bytes = new TextEncoder().encode(sent.map((e) => `${JSON.stringify(e)}\n`).join(''));
  const stream = ResponseStream.fromReadableStream(
    new ReadableStream({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    }),
  );
  return { sent, final: stream.finalResponse() };
}

describe('Responses events from chat chunks, as the openai SDK assembles them', () => {
  it('text, then two tool calls, each closed before the next opens', async () => {
    const { sent, final } = await assemble((w) => {
      w.chunk(text('Let me '));
      w.chunk(text('check.'));
      w.chunk(call(0, { id: 'call_a', name: 'weather', arguments: '{"city":' }));
      w.chunk(call(0, { arguments: '"Oslo"}' }));
      w.chunk(call(1, { id: 'call_b', name: 'time', arguments: '{}' }));
      w.chunk(finish('tool_calls'));
      w.complete(FIGURES_USAGE, 1_700_000_001);
    });
    const response = await final;
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe('Let me check.');
    expect(response.output.map((o) => [o.type, (o as { status?: string }).status])).toEqual([
      ['message', 'completed'],
      ['function_call', 'completed'],
      ['function_call', 'completed'],
    ]);
    expect(response.output.slice(1)).toMatchObject([
      { call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}' },
      { call_id: 'call_b', name: 'time', arguments: '{}' },
    ]);
    expect(sent.map((e) => e.sequence_number)).toEqual(sent.map((_, i) => i));
    expect(sent.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  it('a refusal is a refusal part; text after a tool call opens a new message', async () => {
    const { final } = await assemble((w) => {
      w.chunk({ choices: [{ delta: { refusal: 'I cannot ' } as never, finish_reason: null }] });
      w.chunk({ choices: [{ delta: { refusal: 'help.' } as never, finish_reason: null }] });
      w.chunk(call(0, { id: 'call_a', name: 'f', arguments: '{}' }));
      w.chunk(text('Done.', 'stop'));
      w.complete(FIGURES_USAGE, 1_700_000_001);
    });
    const response = await final;
    expect(response.output).toMatchObject([
      { type: 'message', content: [{ type: 'refusal', refusal: 'I cannot help.' }] },
      { type: 'function_call', call_id: 'call_a' },
      { type: 'message', content: [{ type: 'output_text', text: 'Done.' }] },
    ]);
  });

  it('content as parts (Mistral’s reasoning models): the text parts are the output text, thinking is not', async () => {
    const parts = (content: unknown[]): ChatChunk => ({
      choices: [{ delta: { content }, finish_reason: null }],
    });
    const { sent, final } = await assemble((w) => {
      w.chunk(parts([{ type: 'thinking', thinking: [{ type: 'text', text: 'Two and two...' }] }]));
      w.chunk(parts([{ type: 'text', text: 'It is ' }]));
      w.chunk(parts([{ type: 'text', text: 'four.' }]));
      w.chunk(finish('stop'));
      w.complete(FIGURES_USAGE, 1);
    });
    expect((await final).output_text).toBe('It is four.');
    expect(sent.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual([
      'It is ',
      'four.',
    ]);
  });

  it('thinking (reasoning_content, or Mistral’s thinking parts) is one reasoning item before the message', async () => {
    const beside = (fields: Record<string, unknown>): ChatChunk => ({
      choices: [{ delta: fields as never, finish_reason: null }],
    });
    const thought = (t: string) => ({ type: 'thinking', thinking: [{ type: 'text', text: t }] });
    const feeds: Record<string, (w: ResponsesEventWriter) => void> = {
      reasoning_content: (w) => {
        w.chunk(beside({ role: 'assistant', content: '' }));
        w.chunk(beside({ reasoning_content: 'Two and ', content: null }));
        w.chunk(beside({ reasoning_content: 'two...', content: null }));
        w.chunk(beside({ reasoning_content: null, content: 'It is ' }));
        w.chunk(text('four.', 'stop'));
      },
      reasoning: (w) => {
        w.chunk(beside({ reasoning: 'Two and ' }));
        w.chunk(beside({ reasoning: 'two...' }));
        w.chunk(text('It is four.', 'stop'));
      },
      parts: (w) => {
        w.chunk(beside({ content: [thought('Two and ')] }));
        // thinking and text in one delta
        w.chunk(beside({ content: [thought('two...'), { type: 'text', text: 'It is ' }] }));
        w.chunk(beside({ content: [{ type: 'text', text: 'four.' }] }));
        w.chunk(finish('stop'));
      },
    };
    for (const [form, feed] of Object.entries(feeds)) {
      const { sent, final } = await assemble((w) => {
        feed(w);
        w.complete(FIGURES_USAGE, 1);
      });
      const response = await final;
      expect({ form, text: response.output_text, output: response.output }).toMatchObject({
        form,
        text: 'It is four.',
        output: [
          {
            type: 'reasoning',
            id: expect.stringMatching(/^rs_/),
            status: 'completed',
            summary: [],
            content: [{ type: 'reasoning_text', text: 'Two and two...' }],
          },
          { type: 'message', content: [{ type: 'output_text', text: 'It is four.' }] },
        ],
      });
      expect(sent.map((e) => e.sequence_number)).toEqual(sent.map((_, i) => i));
      expect(sent.map((e) => e.type)).toEqual([
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        'response.reasoning_text.delta',
        'response.reasoning_text.delta',
        'response.reasoning_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.output_item.added',
        'response.content_part.added',
        ...(form === 'reasoning'
          ? ['response.output_text.delta']
          : Array(2).fill('response.output_text.delta')),
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ]);
      expect(sent.find((e) => e.type === 'response.reasoning_text.done')).toMatchObject({
        output_index: 0,
        content_index: 0,
        text: 'Two and two...',
      });
      expect(sent.find((e) => e.type === 'response.output_text.delta')).toMatchObject({ output_index: 1 });
    }
  });

  it('thinking alone still answers an (empty) message; thinking cut short is an incomplete item', async () => {
    const thinking = (t: string): ChatChunk => ({
      choices: [{ delta: { reasoning_content: t }, finish_reason: null }],
    });
    const alone = await assemble((w) => {
      w.chunk(thinking('Hmm.'));
      w.chunk(finish('length'));
      w.complete(FIGURES_USAGE, 1);
    });
    const only = await alone.final;
    // the reasoning item is closed before the empty message opens
    expect(alone.sent.map((e) => e.type).slice(5, 8)).toEqual([
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    expect(only.output).toMatchObject([
      { type: 'reasoning', status: 'incomplete', content: [{ text: 'Hmm.' }] },
      { type: 'message', status: 'incomplete', content: [{ type: 'output_text', text: '' }] },
    ]);
    const { sent, final } = await assemble((w) => {
      w.chunk(thinking('Let me'));
      w.fail({ code: 'PROVIDER_ERROR', status: 502, message: 'gone' }, FIGURES_USAGE);
    });
    await expect(final).rejects.toBeInstanceOf(APIError);
    expect(sent.at(-2)).toMatchObject({
      type: 'response.failed',
      response: { output: [{ type: 'reasoning', status: 'incomplete', content: [{ text: 'Let me' }] }] },
    });
  });

  it('no thinking, no reasoning item: a null reasoning_content beside the text opens nothing', async () => {
    const response = await (
      await assemble((w) => {
        w.chunk({ choices: [{ delta: { content: 'Hi', reasoning_content: null }, finish_reason: 'stop' }] });
        w.complete(FIGURES_USAGE, 1);
      })
    ).final;
    expect(response.output.map((o) => o.type)).toEqual(['message']);
  });

  it('an empty answer is an empty message; the length limit makes it incomplete', async () => {
    const empty = await (await assemble((w) => w.complete(FIGURES_USAGE, 1))).final;
    expect(empty.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: '' }] }]);
    const { sent, final } = await assemble((w) => {
      w.chunk(text('Once upon'));
      w.chunk(finish('length'));
      w.complete(FIGURES_USAGE, 1);
    });
    const cut = await final;
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(cut.output[0]).toMatchObject({ status: 'incomplete' });
    expect(sent.at(-1)!.type).toBe('response.incomplete');
  });

  it('a cut stream fails: response.failed with the partial output, then the envelope, which the SDK raises', async () => {
    const envelope = {
      error: 'MONTHLY_QUOTA_EXCEEDED',
      code: 'MONTHLY_QUOTA_EXCEEDED',
      status: 429,
      message: 'spent',
    };
    const { sent, final } = await assemble((w) => {
      w.chunk(text('Partial'));
      w.fail(envelope, FIGURES_USAGE);
    });
    const err = await final.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect(sent.slice(-2)).toMatchObject([
      {
        type: 'response.failed',
        response: {
          status: 'failed',
          error: { code: 'rate_limit_exceeded', message: 'spent' },
          output: [{ type: 'message', status: 'incomplete', content: [{ text: 'Partial' }] }],
          usage: FIGURES_USAGE,
        },
      },
      { type: 'error', code: 'MONTHLY_QUOTA_EXCEEDED', message: 'spent', param: null, error: envelope },
    ]);
  });

  describe("Claude's signed thinking blocks as the reasoning item's encrypted_content", () => {
    const signed = { type: 'thinking', thinking: 'Two and two...', signature: 'c2ln' };
    const redacted = { type: 'redacted_thinking', data: 'cmVk' };
    const carried = (blocks: unknown[]) =>
      `gwtb1:${Buffer.from(JSON.stringify(blocks)).toString('base64url')}`;
    const delta = (fields: Record<string, unknown>): ChatChunk => ({
      choices: [{ delta: fields as never, finish_reason: null }],
    });

    it('streamed: the blocks join the item, whose done event and the final response carry them', async () => {
      const feed = (w: ResponsesEventWriter) => {
        w.chunk(delta({ reasoning_content: 'Two and ' }));
        w.chunk(delta({ reasoning_content: 'two...' }));
        w.chunk(delta({ thinking_blocks: [signed] }));
        w.chunk(text('Four.', 'stop'));
        w.complete(FIGURES_USAGE, 1);
      };
      const { sent, final } = await assemble(feed, true);
      const response = await final;
      expect(response.output[0]).toEqual({
        id: expect.stringMatching(/^rs_/),
        type: 'reasoning',
        status: 'completed',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'Two and two...' }],
        encrypted_content: carried([signed]),
      });
      const done = sent.find((e) => e.type === 'response.output_item.done') as { item: unknown };
      expect(done.item).toEqual(response.output[0]);
      expect(sent.at(-1)).toMatchObject({
        type: 'response.completed',
        response: { output: [done.item, {}] },
      });
      // not asked, not kept: the blocks are passed over, as before
      const plain = await (await assemble(feed)).final;
      expect(plain.output[0]).not.toHaveProperty('encrypted_content');
    });

    it('a redacted block alone opens a reasoning item without text; a later thinking block joins it', async () => {
      const { sent, final } = await assemble((w) => {
        w.chunk(delta({ thinking_blocks: [redacted] }));
        w.chunk(delta({ reasoning_content: 'Hmm.' }));
        w.chunk(delta({ thinking_blocks: [{ ...signed, thinking: 'Hmm.' }] }));
        w.chunk(call(0, { id: 'call_a', name: 'weather', arguments: '{}' }));
        w.chunk(finish('tool_calls'));
        w.complete(FIGURES_USAGE, 1);
      }, true);
      const response = await final;
      expect(response.output.map((o) => o.type)).toEqual(['reasoning', 'function_call']);
      expect(response.output[0]).toMatchObject({
        content: [{ type: 'reasoning_text', text: 'Hmm.' }],
        encrypted_content: carried([redacted, { ...signed, thinking: 'Hmm.' }]),
      });
      const alone = await (
        await assemble((w) => {
          w.chunk(delta({ thinking_blocks: [redacted] }));
          w.chunk(text('Fog.', 'stop'));
          w.complete(FIGURES_USAGE, 1);
        }, true)
      ).final;
      expect(alone.output[0]).toEqual({
        id: expect.stringMatching(/^rs_/),
        type: 'reasoning',
        status: 'completed',
        summary: [],
        content: [],
        encrypted_content: carried([redacted]),
      });
      expect(sent.filter((e) => e.type === 'response.content_part.added')).toHaveLength(1);
    });

    it('a plain answer: its blocks on the reasoning item, a redacted block alone making one', () => {
      const answer = (message: Record<string, unknown>, encryptedReasoning: boolean) =>
        fromChatCompletion(
          base(encryptedReasoning),
          {
            choices: [
              { message: { role: 'assistant', content: 'Four.', ...message }, finish_reason: 'stop' },
            ],
          },
          FIGURES_USAGE,
          1,
        ).output as Array<Record<string, unknown>>;
      expect(answer({ reasoning_content: 'Two and two...', thinking_blocks: [signed] }, true)[0]).toEqual({
        id: expect.stringMatching(/^rs_/),
        type: 'reasoning',
        status: 'completed',
        summary: [],
        content: [{ type: 'reasoning_text', text: 'Two and two...' }],
        encrypted_content: carried([signed]),
      });
      expect(answer({ thinking_blocks: [redacted] }, true)[0]).toMatchObject({
        type: 'reasoning',
        content: [],
        encrypted_content: carried([redacted]),
      });
      expect(answer({ thinking_blocks: [redacted] }, false).map((o) => o.type)).toEqual(['message']);
      expect(
        answer({ reasoning_content: 'Two and two...', thinking_blocks: [signed] }, false)[0],
      ).not.toHaveProperty('encrypted_content');
    });
  });
});
