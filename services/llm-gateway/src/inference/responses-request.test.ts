import { refuseUnsupported, toChatRequest } from './responses-request';

const issuesOf = (run: () => unknown): Array<{ field: string }> => {
  try {
    run();
  } catch (err) {
    return (err as { details: { issues: Array<{ field: string }> } }).details.issues;
  }
  return [];
};

describe('a Responses request in chat terms', () => {
  it('input items become chat messages: parts, images, a turn of calls, their outputs', () => {
    const { chat } = toChatRequest({
      model: 'sim/gpt',
      instructions: 'Be brief',
      input: [
        { role: 'developer', content: 'Use metric units' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather here?' },
            { type: 'input_image', image_url: 'https://example.com/sky.png', detail: 'original' },
          ],
        },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Looking.', annotations: [] }],
        },
        { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call', call_id: 'call_2', name: 'time', arguments: '{}' },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: '12:00' }] },
      ],
      tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: null }],
      tool_choice: { type: 'function', name: 'weather' },
      parallel_tool_calls: false,
      text: { format: { type: 'json_schema', name: 'w', schema: { type: 'object' }, strict: true } },
      reasoning: { effort: 'low', summary: 'auto' },
      metadata: { a: 'b' },
      store: true,
    });
    expect(chat).toEqual({
      model: 'sim/gpt',
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'developer', content: 'Use metric units' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather here?' },
            { type: 'image_url', image_url: { url: 'https://example.com/sky.png', detail: 'auto' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call_2', type: 'function', function: { name: 'time', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
        { role: 'tool', tool_call_id: 'call_2', content: '12:00' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
      parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'weather' } },
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'w', schema: { type: 'object' }, strict: true },
      },
      reasoning_effort: 'low',
    });
  });

  it('refuses each member and item it cannot serve, naming them all at once', () => {
    expect(
      issuesOf(() =>
        refuseUnsupported({
          input: 'x',
          previous_response_id: 'resp_1',
          conversation: 'conv_1',
          background: true,
          tools: [{ type: 'function', name: 'f' }, { type: 'web_search' }],
          reasoning: { effort: 'low', context: 'all_turns' },
          seed: 3,
        }),
      ).map((i) => i.field),
    ).toEqual(['conversation', 'background', 'seed', 'tools.1.type', 'reasoning.context']);
    expect(
      issuesOf(() =>
        toChatRequest({
          input: [
            { role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] },
            { role: 'tool', content: 'x' },
            { type: 'function_call_output', call_id: 'call_9', output: 'x' },
            { type: 'computer_call', call_id: 'c' },
          ],
        }),
      ).map((i) => i.field),
    ).toEqual(['input.0.content.0', 'input.1.role', 'input.2.call_id', 'input.3.type']);
    expect(
      issuesOf(() => refuseUnsupported({ input: 'x', previous_response_id: null, store: true })),
    ).toEqual([]);
  });

  it('refuses members named like those of Object (`__proto__`, `constructor`) as any unknown member', () => {
    const body = JSON.parse('{"input":"x","__proto__":{"a":1},"constructor":{"b":2},"toString":3}');
    expect(issuesOf(() => refuseUnsupported(body))).toEqual([
      { field: '__proto__', message: 'is not supported' },
      { field: 'constructor', message: 'is not supported' },
      { field: 'toString', message: 'is not supported' },
    ]);
  });

  it("sends no tool_choice 'auto' or 'none' without tools (OpenAI's chat refuses one), and echoes it", () => {
    for (const choice of ['auto', 'none'] as const) {
      const { chat, echo } = toChatRequest({ input: 'x', tool_choice: choice });
      expect(chat).not.toHaveProperty('tool_choice');
      expect(echo.tool_choice).toBe(choice);
    }
    const tools = [{ type: 'function', name: 'f' }];
    expect(toChatRequest({ input: 'x', tools, tool_choice: 'none' }).chat.tool_choice).toBe('none');
    expect(toChatRequest({ input: 'x', tools, tool_choice: 'required' }).chat.tool_choice).toBe('required');
    // without tools, 'required' is refused before any call (routes/translation-refusals.test.ts)
  });

  it('a stored chain comes before input, its function calls answerable; only the new instructions are sent', () => {
    const earlier = [
      {
        id: 'msg_a',
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'Weather in Oslo?' }],
      },
      {
        id: 'fc_a',
        type: 'function_call',
        status: 'completed',
        call_id: 'call_1',
        name: 'weather',
        arguments: '{"city":"Oslo"}',
      },
    ];
    const { chat, echo } = toChatRequest(
      {
        input: [{ type: 'function_call_output', call_id: 'call_1', output: 'Sunny' }],
        instructions: 'Answer in French',
        previous_response_id: 'resp_1',
      },
      earlier,
    );
    expect(chat.messages).toEqual([
      { role: 'system', content: 'Answer in French' },
      { role: 'user', content: 'Weather in Oslo?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
    ]);
    expect(echo).toMatchObject({
      previous_response_id: 'resp_1',
      store: true,
      instructions: 'Answer in French',
    });
    // without the chain the output answers no call; a bad new item is still named by its place in input
    expect(
      issuesOf(() =>
        toChatRequest({ input: [{ type: 'function_call_output', call_id: 'call_1', output: 'Sunny' }] }),
      ).map((i) => i.field),
    ).toEqual(['input.0.call_id']);
    expect(
      issuesOf(() => toChatRequest({ input: [{ type: 'computer_call' }] }, earlier)).map((i) => i.field),
    ).toEqual(['input.0.type']);
  });

  it('store is true unless false, as OpenAI', () => {
    expect(toChatRequest({ input: 'x' }).echo.store).toBe(true);
    expect(toChatRequest({ input: 'x', store: null }).echo.store).toBe(true);
    expect(toChatRequest({ input: 'x', store: false }).echo.store).toBe(false);
  });

  describe("a reasoning item's encrypted_content, the gateway's own, as Claude's signed thinking", () => {
    const signed = { type: 'thinking', thinking: 'Hmm.', signature: 'c2ln' };
    const redacted = { type: 'redacted_thinking', data: 'cmVk' };
    const carried = (blocks: unknown) => `gwtb1:${Buffer.from(JSON.stringify(blocks)).toString('base64url')}`;
    const reasoning = (encrypted_content?: string) => ({
      type: 'reasoning',
      id: 'rs_1',
      summary: [],
      content: [{ type: 'reasoning_text', text: 'Hmm.' }],
      ...(encrypted_content !== undefined ? { encrypted_content } : {}),
    });
    const fc = (id: string) => ({ type: 'function_call', call_id: id, name: 'weather', arguments: '{}' });
    const messagesOf = (input: unknown[], earlier: Array<Record<string, unknown>> = []) =>
      toChatRequest({ input }, earlier).chat.messages;

    it('becomes the thinking_blocks of the assistant message the items after it form', () => {
      expect(
        messagesOf([
          { role: 'user', content: 'Weather?' },
          reasoning(carried([redacted, signed])),
          fc('call_1'),
          fc('call_2'),
          { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
        ]),
      ).toEqual([
        { role: 'user', content: 'Weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [expect.objectContaining({ id: 'call_1' }), expect.objectContaining({ id: 'call_2' })],
          thinking_blocks: [redacted, signed],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'Sunny' },
      ]);
      // before a message: the message's; the calls after it join that turn
      expect(
        messagesOf([
          { role: 'user', content: 'Weather?' },
          reasoning(carried([signed])),
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.' }] },
          fc('call_1'),
        ])[1],
      ).toEqual({
        role: 'assistant',
        content: 'Looking.',
        thinking_blocks: [signed],
        tool_calls: [expect.objectContaining({ id: 'call_1' })],
      });
      // a stored chain's items alike
      expect(
        messagesOf(
          [{ type: 'function_call_output', call_id: 'call_1', output: 'Sunny' }],
          [{ role: 'user', content: 'Weather?' }, reasoning(carried([signed])), fc('call_1')],
        )[1],
      ).toMatchObject({ role: 'assistant', thinking_blocks: [signed] });
    });

    it('text alone, OpenAI’s own content, or thinking no assistant turn follows: no thinking_blocks', () => {
      const messages = messagesOf([
        { role: 'user', content: 'Weather?' },
        reasoning(),
        fc('call_1'),
        { type: 'function_call_output', call_id: 'call_1', output: 'Sunny' },
        reasoning('gAAAAABopenai'),
        fc('call_2'),
        { type: 'function_call_output', call_id: 'call_2', output: 'Rain' },
        reasoning(carried([signed])),
        { role: 'user', content: 'And tomorrow?' },
        { role: 'assistant', content: 'Snow.' },
      ]);
      expect(messages.filter((m) => 'thinking_blocks' in (m as object))).toEqual([]);
    });

    it('a malformed gwtb1 payload is refused, naming the item', () => {
      for (const bad of [
        'gwtb1:',
        'gwtb1:@@@',
        `gwtb1:${Buffer.from('not json').toString('base64url')}`,
        carried({ type: 'thinking' }),
        carried([]),
        carried([{ type: 'thinking', thinking: 'x' }]),
        carried([{ type: 'tool_use' }]),
      ])
        expect({
          bad,
          issues: issuesOf(() => messagesOf([{ role: 'user', content: 'x' }, reasoning(bad)])),
        }).toEqual({ bad, issues: [{ field: 'input.1.encrypted_content', message: expect.any(String) }] });
    });
  });
});
