import type {
  Response,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  ResponseStreamEvent,
} from 'openai/resources/responses/responses';
import { WEATHER } from './responses-fixtures';
import { type GatewayWorld, startGatewayWorld } from './support';

type Json = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the simulator's requests are asserted field by field
type Loose = any;

const signedBlock = {
  type: 'thinking',
  thinking: expect.stringMatching(/.+/),
  signature: expect.stringMatching(/.+/),
};
const redactedBlock = { type: 'redacted_thinking', data: expect.stringMatching(/.+/) };

/** The blocks a reasoning item's `encrypted_content` carries (the gateway's `gwtb1:` form). */
function blocksOf(encrypted: unknown): Json[] {
  expect(encrypted).toEqual(expect.stringMatching(/^gwtb1:[A-Za-z0-9_-]+$/));
  return JSON.parse(Buffer.from(String(encrypted).slice('gwtb1:'.length), 'base64url').toString('utf8'));
}

const reasoningOf = (response: Response): Loose => response.output.find((item) => item.type === 'reasoning');
const callOf = (response: Response): { call_id: string } =>
  response.output.find((item) => item.type === 'function_call') as { call_id: string };

/**
 * Claude's signed thinking through the Responses API (decision 0114), as Codex CLI and the Agents SDK run a tool loop
 * with the official `openai` SDK: the reasoning item's `encrypted_content` carries the signed blocks, and sent back
 * (or read back from a stored chain) it makes the continuation think on. The simulator's Anthropic face refuses a
 * thinking tool loop whose assistant turn lacks its signed block, and checks every signature.
 */
describe("Claude's signed thinking through the Responses API", () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('responses-thinking-e2e'));
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const client = () => w.client({ bearer: owner.token });
  const sent = (): Loose => w.sim.requests().at(-1)!.body;
  const ask = (content: string): ResponseInputItem => ({ role: 'user', content });
  /** what Codex CLI sends: nothing stored, the reasoning carried by the client */
  const codex = {
    model: 'sim/claude',
    store: false,
    include: ['reasoning.encrypted_content' as const],
    reasoning: { effort: 'low' as const },
    tools: [WEATHER],
  };
  /** the next turn of a stateless loop: the earlier input, the answer's output items, the tool's result */
  const loop = (
    input: ResponseInputItem[],
    answer: Response,
    output = 'Sunny, 21 C',
  ): ResponseInputItem[] => [
    ...input,
    ...(answer.output as ResponseInputItem[]),
    { type: 'function_call_output', call_id: callOf(answer).call_id, output },
  ];

  /** The continuation reached Claude thinking, its assistant turn starting with the signed block answered. */
  function expectThinkingContinued(block: Json): void {
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(sent().messages[1]).toMatchObject({ role: 'assistant' });
    expect(sent().messages[1].content[0]).toEqual(block);
  }

  it('a Codex-style stateless tool loop carries the signed thinking in encrypted_content, and Claude thinks on', async () => {
    const input = [ask('What is the weather in Paris? Use the tool.')];
    const first = await client().responses.create({ ...codex, input });
    expect(first).toMatchObject({ store: false });
    const reasoning = reasoningOf(first);
    expect(reasoning).toEqual({
      id: expect.stringMatching(/^rs_/),
      type: 'reasoning',
      status: 'completed',
      summary: [],
      content: [{ type: 'reasoning_text', text: expect.stringMatching(/.+/) }],
      encrypted_content: expect.stringMatching(/^gwtb1:/),
    });
    const blocks = blocksOf(reasoning.encrypted_content);
    expect(blocks).toEqual([{ ...signedBlock, thinking: reasoning.content[0].text }]);
    expect(first.output.map((item) => item.type)).toEqual(['reasoning', 'function_call']);

    const second = await client().responses.create({ ...codex, input: loop(input, first) });
    expect(second.status).toBe('completed');
    expect(second.output_text.length).toBeGreaterThan(0);
    expectThinkingContinued(blocks[0]!);
    expect(sent().messages[1].content.map((b: Json) => b.type)).toEqual(['thinking', 'tool_use']);
  });

  it('streamed: the reasoning item is done with its encrypted_content, and response.completed carries it', async () => {
    const input = [ask('Weather in Oslo? Use the tool.')];
    const events: ResponseStreamEvent[] = [];
    const stream = client().responses.stream({ ...codex, input });
    for await (const event of stream) events.push(event);
    const first = await stream.finalResponse();

    const done = events.find(
      (e) => e.type === 'response.output_item.done' && e.item.type === 'reasoning',
    ) as Loose;
    const completed = events.find((e) => e.type === 'response.completed') as Loose;
    const blocks = blocksOf(done.item.encrypted_content);
    expect(blocks).toEqual([signedBlock]);
    expect(done.item.content).toEqual([{ type: 'reasoning_text', text: blocks[0]!.thinking }]);
    expect(reasoningOf(completed.response).encrypted_content).toBe(done.item.encrypted_content);
    expect(reasoningOf(first).encrypted_content).toBe(done.item.encrypted_content);
    // the added event opens the item before its blocks are whole
    const added = events.find(
      (e) => e.type === 'response.output_item.added' && e.item.type === 'reasoning',
    ) as Loose;
    expect(added.item.encrypted_content).toBeUndefined();

    const second = await client()
      .responses.stream({ ...codex, input: loop(input, first) })
      .finalResponse();
    expect(second.status).toBe('completed');
    expectThinkingContinued(blocks[0]!);
  });

  it('a previous_response_id continuation reads the stored signed thinking back; GET answers it as stored', async () => {
    const { store: _store, include: _include, ...stored } = codex;
    const first = await client().responses.create({
      ...stored,
      input: 'What is the weather in Rome? Use the tool.',
    });
    expect(first).toMatchObject({ store: true });
    // kept for the next turn, so answered as kept
    const blocks = blocksOf(reasoningOf(first).encrypted_content);
    expect(blocks).toEqual([signedBlock]);
    expect(await client().responses.retrieve(first.id)).toEqual(first);

    const second = await client().responses.create({
      ...stored,
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: callOf(first).call_id, output: 'Rain' }],
    });
    expect(second.status).toBe('completed');
    expectThinkingContinued(blocks[0]!);

    // a conversation's turns are read back the same way
    const conversation = await client().conversations.create();
    const turn = await client().responses.create({
      ...stored,
      conversation: conversation.id,
      input: 'What is the weather in Bern? Use the tool.',
    });
    const turnBlocks = blocksOf(reasoningOf(turn).encrypted_content);
    await client().responses.create({
      ...stored,
      conversation: conversation.id,
      input: [{ type: 'function_call_output', call_id: callOf(turn).call_id, output: 'Snow' }],
    });
    expectThinkingContinued(turnBlocks[0]!);
  });

  it('a turn whose text came between its parallel calls, as a stream writes it, still thinks on', async () => {
    w.sim.script([
      {
        match: { model: 'claude-sim' },
        times: 1,
        reply: {
          content: 'Checking both.',
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Oslo' } },
            { name: 'get_weather', arguments: { city: 'Rome' } },
          ],
        },
      },
    ]);
    const input = [ask('Weather in Oslo and Rome? Use the tool.')];
    const first = await client().responses.create({ ...codex, input });
    expect(first.output.map((item) => item.type)).toEqual([
      'reasoning',
      'message',
      'function_call',
      'function_call',
    ]);
    const [reasoning, message, oslo, rome] = first.output as Loose[];
    const blocks = blocksOf(reasoning.encrypted_content);
    // Claude's [thinking, tool_use, text, tool_use] streamed: the text after the first call is a message item of its own
    const second = await client().responses.create({
      ...codex,
      input: [
        ...input,
        reasoning,
        oslo,
        message,
        rome,
        { type: 'function_call_output', call_id: oslo.call_id, output: 'Sunny' },
        { type: 'function_call_output', call_id: rome.call_id, output: 'Rain' },
      ],
    });
    expect(second.status).toBe('completed');
    expectThinkingContinued(blocks[0]!);
    expect(sent().messages[1].content.map((b: Json) => b.type)).toEqual([
      'thinking',
      'tool_use',
      'text',
      'tool_use',
    ]);
  });

  it('without include, a response not stored answers no encrypted_content, and the loop goes on without thinking', async () => {
    const { include: _include, ...plain } = codex;
    const input = [ask('Weather in Madrid? Use the tool.')];
    const first = await client().responses.create({ ...plain, input });
    const reasoning = reasoningOf(first);
    expect(reasoning.content).toEqual([{ type: 'reasoning_text', text: expect.stringMatching(/.+/) }]);
    expect(reasoning).not.toHaveProperty('encrypted_content');
    const streamed = await client()
      .responses.stream({ ...plain, input })
      .finalResponse();
    expect(reasoningOf(streamed)).not.toHaveProperty('encrypted_content');

    const second = await client().responses.create({ ...plain, input: loop(input, first) });
    expect(second.status).toBe('completed');
    expect(sent().thinking).toBeUndefined();
    expect(sent().messages[1].content.map((b: Json) => b.type)).toEqual(['tool_use']);
  });

  it("a malformed gwtb1 payload is a 400 naming the item, before any provider call; another's encrypted_content is ignored", async () => {
    const reasoning = (encrypted_content: string) => ({
      type: 'reasoning',
      id: 'rs_1',
      summary: [],
      encrypted_content,
    });
    for (const bad of [
      'gwtb1:not base64!',
      `gwtb1:${Buffer.from('{"not":"blocks"}').toString('base64url')}`,
      `gwtb1:${Buffer.from(JSON.stringify([{ type: 'thinking', thinking: 'x' }])).toString('base64url')}`,
    ]) {
      const refused = await w.call(
        'gateway',
        'POST',
        '/v1/responses',
        { bearer: owner.token },
        {
          ...codex,
          input: [ask('hi'), reasoning(bad), { role: 'assistant', content: 'hello' }, ask('again')],
        },
      );
      expect({ bad, status: refused.status }).toEqual({ bad, status: 400 });
      expect(refused.body).toMatchObject({
        code: 'INVALID_BODY',
        details: { issues: [{ field: 'input.1.encrypted_content', message: expect.any(String) }] },
      });
    }
    expect(w.sim.requests()).toHaveLength(0);

    // OpenAI's own encrypted reasoning (another provider's turn) is passed over, as before
    const answer = await client().responses.create({
      ...codex,
      input: [
        ask('hi'),
        reasoning('gAAAAABoOpenAIsOwnEncryptedReasoning=') as ResponseInputItem,
        { role: 'assistant', content: 'hello' },
        ask('again'),
      ],
    });
    expect(answer.status).toBe('completed');
    expect(sent().messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'hello' }] });
  });

  it('a redacted block alone still makes a reasoning item carrying it, plain and streamed, and goes back', async () => {
    w.sim.script([{ match: { model: 'claude-sim' }, reply: { redactedThinking: true } }]);
    const input = [ask('Weather in Lima? Use the tool.')];
    const first = await client().responses.create({ ...codex, input });
    const reasoning = reasoningOf(first);
    expect(reasoning).toMatchObject({ type: 'reasoning', status: 'completed', summary: [], content: [] });
    const blocks = blocksOf(reasoning.encrypted_content);
    expect(blocks).toEqual([redactedBlock]);

    await client().responses.create({ ...codex, input: loop(input, first, 'Fog') });
    expectThinkingContinued(blocks[0]!);

    const streamed = await client()
      .responses.stream({ ...codex, input: [ask('Weather in Quito? Use the tool.')] })
      .finalResponse();
    expect(reasoningOf(streamed)).toMatchObject({ content: [] });
    expect(blocksOf(reasoningOf(streamed).encrypted_content)).toEqual([redactedBlock]);
  });

  it('an OpenAI-protocol model given the Claude turn, encrypted_content included, never receives the blocks', async () => {
    const input = [ask('Weather in Lisbon? Use the tool.')];
    const claude = await client().responses.create({ ...codex, input });
    expect(reasoningOf(claude).encrypted_content).toEqual(expect.stringMatching(/^gwtb1:/));
    const params: ResponseCreateParamsNonStreaming = {
      ...codex,
      model: 'sim/gpt',
      input: loop(input, claude),
    };
    const gpt = await client().responses.create(params);
    expect(gpt.status).toBe('completed');
    const body = sent();
    expect(w.sim.requests().at(-1)!.api).toBe('openai');
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [expect.objectContaining({ id: callOf(claude).call_id })],
    });
    expect(JSON.stringify(body)).not.toContain('thinking_blocks');
  });
});
