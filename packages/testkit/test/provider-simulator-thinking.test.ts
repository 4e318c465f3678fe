import {
  anthropicInputTokens,
  countSimulatorTokens,
  type ProviderSimulator,
  startProviderSimulator,
} from '../src';

let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator();
});
afterAll(() => sim.close());
beforeEach(() => sim.reset());

// biome-ignore lint/suspicious/noExplicitAny: the tests read arbitrary wire JSON
type Wire = any;

const anthropic = (body: unknown) =>
  fetch(`${sim.anthropicBaseUrl}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });

async function answer(body: unknown): Promise<Wire> {
  const res = await anthropic(body);
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** The 400 message of a refused request. */
async function refusal(body: unknown): Promise<string> {
  const res = await anthropic(body);
  const json: Wire = await res.json();
  expect(res.status).toBe(400);
  expect(json.error.type).toBe('invalid_request_error');
  return json.error.message;
}

/** The stream's events, in order. */
async function events(body: unknown): Promise<Wire[]> {
  const text = await (await anthropic(body)).text();
  return text
    .split('\n\n')
    .filter((frame) => frame.trim())
    .map((frame) =>
      JSON.parse(
        frame
          .split('\n')
          .find((l) => l.startsWith('data: '))!
          .slice(6),
      ),
    );
}

/** The content blocks a stream builds, as Anthropic's SDK accumulates them. */
function reassemble(all: Wire[]): Wire[] {
  const content: Wire[] = [];
  const json: string[] = [];
  for (const e of all) {
    if (e.type === 'content_block_start') content[e.index] = { ...e.content_block };
    if (e.type !== 'content_block_delta') continue;
    const block = content[e.index];
    if (e.delta.type === 'thinking_delta') block.thinking += e.delta.thinking;
    if (e.delta.type === 'signature_delta') block.signature = e.delta.signature;
    if (e.delta.type === 'text_delta') block.text += e.delta.text;
    if (e.delta.type === 'input_json_delta') json[e.index] = (json[e.index] ?? '') + e.delta.partial_json;
  }
  json.forEach((raw, i) => {
    if (raw !== undefined) content[i].input = JSON.parse(raw);
  });
  return content;
}

const question = 'What is the weather in Paris today, and should I take an umbrella with me?';
const thinking = { type: 'enabled', budget_tokens: 2048 };
const request = {
  model: 'claude-sim',
  max_tokens: 4096,
  thinking,
  messages: [{ role: 'user', content: question }],
};
const tools = [
  { name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
];
const thought = `Let me think about "${question.slice(0, 60)}".`;

/** The follow-up of a tool-use answer: its content as the assistant turn, then the tool's result. */
function toolLoop(assistant: Wire[]) {
  const use = assistant.find((b) => b.type === 'tool_use');
  return {
    ...request,
    tools,
    messages: [
      ...request.messages,
      { role: 'assistant', content: assistant },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Rain, 12°C' }] },
    ],
  };
}

describe('provider simulator: Anthropic extended thinking', () => {
  it('with thinking enabled, the answer starts with a signed thinking block about the prompt, billed as output', async () => {
    const body = await answer(request);
    const text = `Simulated answer to: ${question.split(' ').slice(0, 12).join(' ')}`;
    expect(body.content).toEqual([
      { type: 'thinking', thinking: thought, signature: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/) },
      { type: 'text', text },
    ]);
    expect(body.usage.output_tokens).toBe(countSimulatorTokens(thought) + countSimulatorTokens(text));
    expect(body.usage.input_tokens).toBe(anthropicInputTokens(request));
  });

  it('streamed, the thinking is block 0 (thinking_delta pieces, then one signature_delta) and the text block 1', async () => {
    const plain = await answer(request);
    const all = await events({ ...request, stream: true });
    const thinkingEvents = all.filter((e) => e.index === 0);
    expect(thinkingEvents[0]).toEqual({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    });
    const deltas = thinkingEvents.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.type);
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.slice(0, -1).every((t) => t === 'thinking_delta')).toBe(true);
    expect(deltas.at(-1)).toBe('signature_delta');
    expect(thinkingEvents.at(-1)).toEqual({ type: 'content_block_stop', index: 0 });
    expect(reassemble(all)).toEqual(plain.content);
    expect(all.find((e) => e.type === 'message_delta').usage.output_tokens).toBe(plain.usage.output_tokens);
  });

  it.each([
    [
      'a budget under 1024',
      { thinking: { type: 'enabled', budget_tokens: 1000 } },
      'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024',
    ],
    [
      'a budget that is not an integer',
      { thinking: { type: 'enabled', budget_tokens: 2048.5 } },
      'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024',
    ],
    [
      'max_tokens not above the budget',
      { max_tokens: 2048 },
      '`max_tokens` must be greater than `thinking.budget_tokens`',
    ],
    [
      'a temperature other than 1',
      { temperature: 0.7 },
      '`temperature` may only be set to 1 when thinking is enabled',
    ],
    [
      'a top_p under 0.95',
      { top_p: 0.9 },
      '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled',
    ],
    ['any top_k', { top_k: 40 }, '`top_k` must be unset when thinking is enabled'],
    [
      'tool_choice any',
      { tools, tool_choice: { type: 'any' } },
      'Thinking may not be enabled when tool_choice forces tool use.',
    ],
    [
      'tool_choice naming a tool',
      { tools, tool_choice: { type: 'tool', name: 'weather' } },
      'Thinking may not be enabled when tool_choice forces tool use.',
    ],
    ['an unknown thinking type', { thinking: { type: 'on' } }, "thinking: Input tag 'on' found"],
  ])('refuses %s as Anthropic does', async (_what, change, message) => {
    expect(await refusal({ ...request, ...change })).toContain(message);
  });

  it('accepts the sampling settings thinking allows: temperature 1, top_p from 0.95, tool_choice auto', async () => {
    const body = await answer({
      ...request,
      temperature: 1,
      top_p: 0.95,
      tools,
      tool_choice: { type: 'auto' },
    });
    expect(body.content.map((b: Wire) => b.type)).toEqual(['thinking', 'tool_use']);
  });

  it('a tool loop: the answer’s thinking sent back is accepted; tampered with or left out, it is refused', async () => {
    const first = await answer({ ...request, tools });
    expect(first.content.map((b: Wire) => b.type)).toEqual(['thinking', 'tool_use']);

    const next = await answer(toolLoop(first.content));
    expect(next.content[0]).toMatchObject({
      type: 'thinking',
      thinking: 'Let me think about the tool results.',
    });
    expect(next.stop_reason).toBe('end_turn');
    // thinking blocks are not input tokens (Anthropic strips them)
    expect(next.usage.input_tokens).toBe(anthropicInputTokens(toolLoop(first.content.slice(1))));

    const [block, use] = first.content;
    const tampered = [
      { ...block, signature: `${block.signature[0] === 'A' ? 'B' : 'A'}${block.signature.slice(1)}` },
      { ...block, signature: '' },
      { ...block, thinking: `${block.thinking} Also, Lyon.` },
    ];
    for (const forged of tampered)
      expect(await refusal(toolLoop([forged, use]))).toBe(
        'messages.1.content.0: Invalid `signature` in `thinking` block',
      );
    expect(await refusal(toolLoop([use]))).toBe(
      'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.',
    );
    expect(await refusal(toolLoop([{ type: 'text', text: 'Checking.' }, use]))).toContain(
      'but found `text`.',
    );
  });

  it('thinking blocks belong to assistant turns; earlier turns may carry them or not', async () => {
    const first = await answer(request);
    const [block] = first.content;
    expect(
      await refusal({
        ...request,
        messages: [{ role: 'user', content: [block, { type: 'text', text: 'Hi' }] }],
      }),
    ).toContain('messages.0.content.0:');
    const later = (assistant: Wire[]) => ({
      ...request,
      messages: [
        ...request.messages,
        { role: 'assistant', content: assistant },
        { role: 'user', content: 'Thanks!' },
      ],
    });
    expect((await answer(later(first.content))).content[0].thinking).toBe('Let me think about "Thanks!".');
    expect((await answer(later(first.content.slice(1)))).content[0].type).toBe('thinking');
    // and thinking off, they are still checked, and not counted
    const off = { ...later(first.content), thinking: { type: 'disabled' } };
    expect((await answer(off)).usage.input_tokens).toBe(anthropicInputTokens(later(first.content.slice(1))));
    expect(await refusal(later([{ ...block, signature: 'c2ln' }, first.content[1]]))).toBe(
      'messages.1.content.0: Invalid `signature` in `thinking` block',
    );
  });

  it('a scripted redacted reply answers redacted_thinking, plain and streamed, and it is accepted sent back', async () => {
    sim.script([{ reply: { redactedThinking: true } }]);
    const first = await answer({ ...request, tools });
    expect(first.content[0]).toEqual({ type: 'redacted_thinking', data: expect.any(String) });
    expect(first.content[0].data).not.toContain('Paris');
    expect(first.usage.output_tokens).toBeGreaterThan(
      countSimulatorTokens(JSON.stringify(first.content[1].input)),
    );

    const all = await events({ ...request, tools, stream: true });
    expect(all.filter((e) => e.index === 0)).toEqual([
      { type: 'content_block_start', index: 0, content_block: first.content[0] },
      { type: 'content_block_stop', index: 0 },
    ]);
    expect(reassemble(all).map((b) => b.type)).toEqual(['redacted_thinking', 'tool_use']);

    expect((await answer(toolLoop(first.content))).content[0].type).toBe('redacted_thinking');
    const forged = Buffer.from(JSON.stringify({ text: 'x', mac: 'y' })).toString('base64');
    expect(await refusal(toolLoop([{ type: 'redacted_thinking', data: forged }, first.content[1]]))).toBe(
      'messages.1.content.0: Invalid `data` in `redacted_thinking` block',
    );
  });

  it('without thinking, or with it disabled, the answer is the same as before: no thinking block, same bytes', async () => {
    const strip = (text: string) => text.replace(/msg_sim\d+|toolu_sim\d+/g, 'ID');
    const { thinking: _thinking, ...plain } = request;
    const disabled = { ...plain, thinking: { type: 'disabled' } };
    for (const body of [
      plain,
      { ...plain, tools },
      { ...plain, stream: true },
      { ...plain, tools, stream: true },
    ]) {
      const before = strip(await (await anthropic(body)).text());
      expect(strip(await (await anthropic({ ...body, ...disabled })).text())).toBe(before);
      expect(before).not.toContain('thinking');
    }
    const body = await answer(plain);
    expect(body.content).toEqual([{ type: 'text', text: expect.stringMatching(/^Simulated answer to: /) }]);
    expect(body.usage.output_tokens).toBe(countSimulatorTokens(body.content[0].text));
  });
});
