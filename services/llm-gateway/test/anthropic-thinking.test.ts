import { randomBytes } from 'node:crypto';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import type {
  ContentBlock,
  MessageCreateParamsNonStreaming,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import type OpenAI from 'openai';
import { type GatewayWorld, startGatewayWorld } from './support';

type Json = Record<string, unknown>;
// biome-ignore lint/suspicious/noExplicitAny: the simulator's requests and LiteLLM's members are asserted field by field
type Loose = any;

const WEATHER: Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const CHAT_WEATHER: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: 'function',
  function: {
    name: WEATHER.name,
    description: WEATHER.description!,
    parameters: WEATHER.input_schema as Json,
  },
};

const signedBlock = {
  type: 'thinking',
  thinking: expect.any(String),
  signature: expect.stringMatching(/.+/),
};

/**
 * Extended thinking on a Claude model through the edge (decision 0114), as the official SDKs call it: the `openai`
 * SDK with `reasoning_effort` and LiteLLM's `thinking_blocks`, `@anthropic-ai/sdk` (Claude Code) with `thinking`.
 * The simulator's Anthropic face signs its thinking and checks the signatures and Anthropic's rules, so a block
 * lost or changed on the way fails here.
 */
describe('extended thinking on Claude models through the edge', () => {
  let w: GatewayWorld;
  let owner: { userId: string; token: string };

  beforeAll(async () => {
    w = await startGatewayWorld();
    ({ owner } = await w.org('thinking-e2e'));
  });
  afterAll(() => w?.stop());
  afterEach(() => w.sim.reset());

  const sent = (): Loose => w.sim.requests().at(-1)!.body;
  const openai = () => w.client({ bearer: owner.token });
  const anthropic = () =>
    new Anthropic({ baseURL: w.p.gatewayUrl, apiKey: null, authToken: owner.token, maxRetries: 0 });

  it('reasoning_effort makes Claude think: its text and signed blocks answered, plain and streamed', async () => {
    const ask = {
      model: 'sim/claude',
      messages: [{ role: 'user' as const, content: 'Why is the sky blue?' }],
      reasoning_effort: 'medium' as const,
    };
    const answer = await openai().chat.completions.create(ask);
    expect(sent()).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      max_tokens: 4096 + 2048,
    });
    const message = answer.choices[0]!.message as Loose;
    expect(message.content).toEqual(expect.stringMatching(/.+/));
    expect(message.reasoning_content).toEqual(expect.stringMatching(/.+/));
    expect(message.thinking_blocks).toEqual([{ ...signedBlock, thinking: message.reasoning_content }]);
    // thinking is output at Anthropic: billed in the completion tokens
    expect(answer.usage!.completion_tokens).toBeGreaterThan(0);

    const stream = await openai().chat.completions.create({ ...ask, stream: true });
    let reasoning = '';
    let content = '';
    const blocks: Json[] = [];
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as Loose;
      reasoning += delta?.reasoning_content ?? '';
      content += delta?.content ?? '';
      blocks.push(...(delta?.thinking_blocks ?? []));
    }
    expect({ reasoning, content, blocks }).toEqual({
      reasoning: message.reasoning_content,
      content: message.content,
      blocks: message.thinking_blocks,
    });
  });

  it('a tool loop sends the signed blocks back and goes on thinking; a forged signature is refused', async () => {
    const user = { role: 'user' as const, content: 'Weather in Paris?' };
    const first = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [user],
      tools: [CHAT_WEATHER],
      reasoning_effort: 'low',
    });
    const call = first.choices[0]!.message as Loose;
    expect(call.tool_calls).toHaveLength(1);
    expect(call.thinking_blocks).toEqual([signedBlock]);
    const result = { role: 'tool' as const, tool_call_id: call.tool_calls[0].id, content: 'sunny' };

    // the assistant message as the SDK gave it, appended to the history as clients do
    const second = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [user, call, result],
      tools: [CHAT_WEATHER],
      reasoning_effort: 'low',
    });
    expect(second.choices[0]!.finish_reason).toBe('stop');
    expect(sent().thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(sent().messages[1].content[0]).toEqual(call.thinking_blocks[0]);

    const forged = { ...call, thinking_blocks: [{ ...call.thinking_blocks[0], signature: 'Zm9yZ2Vk' }] };
    const refused = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { bearer: owner.token },
      {
        model: 'sim/claude',
        messages: [user, forged, result],
        tools: [CHAT_WEATHER],
        reasoning_effort: 'low',
      },
    );
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({
      code: 'PROVIDER_ERROR',
      provider_error_type: 'invalid_request_error',
    });
  });

  /** a tool call Claude answered while thinking, as a client that drops LiteLLM's members sends it back */
  const callWithoutBlocks = async (user: { role: 'user'; content: string }, effort: 'low' | 'high') => {
    const first = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [user],
      tools: [CHAT_WEATHER],
      reasoning_effort: effort,
    });
    const {
      thinking_blocks: _blocks,
      reasoning_content: _text,
      ...bare
    } = first.choices[0]!.message as Loose;
    return bare;
  };

  it('a tool loop whose blocks the client dropped goes on without thinking instead of failing', async () => {
    const user = { role: 'user' as const, content: 'Weather in Rome?' };
    const bare = await callWithoutBlocks(user, 'high');
    const next = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [user, bare, { role: 'tool', tool_call_id: bare.tool_calls[0].id, content: 'rain' }],
      tools: [CHAT_WEATHER],
      reasoning_effort: 'high',
    });
    expect(next.choices[0]!.finish_reason).toBe('stop');
    expect(sent()).not.toHaveProperty('thinking');
    expect(sent().max_tokens).toBe(4096);
  });

  it('a tool loop without blocks goes on without thinking when the user speaks after the tool results too', async () => {
    // Codex after an interrupted turn: the tool's output, then the user's next words (one user turn at Anthropic,
    // its tool results included: still the tool loop whose assistant turn must start with thinking)
    const user = { role: 'user' as const, content: 'Weather in Bern?' };
    const bare = await callWithoutBlocks(user, 'low');
    const next = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [
        user,
        bare,
        { role: 'tool', tool_call_id: bare.tool_calls[0].id, content: 'aborted' },
        { role: 'user', content: 'And in Geneva?' },
      ],
      tools: [CHAT_WEATHER],
      reasoning_effort: 'low',
    });
    // answered (Anthropic would have refused the call with thinking: the simulator's 400, a 502 here)
    expect(next.choices[0]!.finish_reason).toEqual(expect.any(String));
    expect(sent()).not.toHaveProperty('thinking');
  });

  it('refuses by name, before any call, what Claude refuses with its own thinking; reasoning_effort yields', async () => {
    const ask = (extra: Json) =>
      w.call(
        'gateway',
        'POST',
        '/v1/chat/completions',
        { bearer: owner.token },
        { model: 'sim/claude', messages: [{ role: 'user', content: 'Hi' }], ...extra },
      );
    const thinking = { type: 'enabled', budget_tokens: 2000 };
    const cases: Array<[Json, RegExp]> = [
      [{ thinking, temperature: 0.2 }, /temperature 1, not 0.2/],
      [{ thinking, tools: [CHAT_WEATHER], tool_choice: 'required' }, /forces a tool/],
      [{ thinking, response_format: { type: 'json_object' } }, /response_format/],
      [{ reasoning_effort: 'extreme' }, /reasoning_effort must be one of/],
    ];
    for (const [extra, why] of cases) {
      const answer = await ask(extra);
      expect({ status: answer.status, code: answer.body.code, provider: answer.body.provider }).toEqual({
        status: 400,
        code: 'INVALID_BODY',
        provider: 'claude',
      });
      expect(answer.body.message).toMatch(why);
    }
    // a thinking member of the wrong shape: the gateway's own 400, whichever model
    for (const model of ['sim/claude', 'sim/gpt']) {
      const malformed = await ask({ model, thinking: { type: 'enabled', budget_tokens: 'big' } });
      expect([malformed.status, malformed.body.code]).toEqual([400, 'INVALID_BODY']);
      expect(JSON.stringify(malformed.body.details)).toContain('thinking');
    }
    expect(w.sim.requests()).toHaveLength(0);

    // reasoning_effort is a preference: where Claude cannot think as asked, it answers without thinking, as before
    for (const extra of [
      { temperature: 0.2 },
      { max_completion_tokens: 500 },
      { tools: [CHAT_WEATHER], tool_choice: 'required' },
      { response_format: { type: 'json_object' } },
    ]) {
      const answer = await ask({ reasoning_effort: 'low', ...extra });
      expect(answer.status).toBe(200);
      expect(answer.body.choices[0].message).not.toHaveProperty('thinking_blocks');
      expect(sent()).not.toHaveProperty('thinking');
    }
  });

  /** a catalogue model added by a platform administrator, as `pnpm platform admin grant` makes one */
  const addModel = async (entry: Json) =>
    w.call('gateway', 'POST', '/v1/models', { bearer: (await w.platformAdmin()).token }, entry);

  it('asks no thinking of a Claude model the catalogue says does not reason', async () => {
    const added = await addModel({
      model_id: 'sim/claude-haiku-3',
      type: 'completion',
      provider_config: { provider: 'claude', model: 'claude-3-haiku-sim' },
      pricing: { input_per_million: 0.25, output_per_million: 1.25 },
      capabilities: { reasoning: false, tools: true },
    });
    expect(added.status).toBe(201);
    const chat = await openai().chat.completions.create({
      model: 'sim/claude-haiku-3',
      messages: [{ role: 'user', content: 'Hi' }],
      reasoning_effort: 'high',
    });
    expect(chat.choices[0]!.message).not.toHaveProperty('thinking_blocks');
    expect(sent()).not.toHaveProperty('thinking');
    const message = await anthropic().messages.create({
      model: 'sim/claude-haiku-3',
      max_tokens: 300,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(message.content.map((b) => b.type)).toEqual(['text']);
    expect(sent()).toMatchObject({ model: 'claude-3-haiku-sim', max_tokens: 300 });
    expect(sent()).not.toHaveProperty('thinking');
  });

  it("Claude Code's anthropic-beta (interleaved thinking) reaches Claude where the model forwards it, only there", async () => {
    const added = await addModel({
      model_id: 'sim/claude-beta',
      type: 'completion',
      provider_config: { provider: 'claude', model: 'claude-sim', forward_headers: ['anthropic-beta'] },
      pricing: { input_per_million: 3, output_per_million: 15 },
    });
    expect(added.status).toBe(201);
    const beta = 'interleaved-thinking-2025-05-14,context-1m-2025-08-07';
    const claudeCode = new Anthropic({
      baseURL: w.p.gatewayUrl,
      apiKey: null,
      authToken: owner.token,
      maxRetries: 0,
      defaultHeaders: { 'anthropic-beta': beta },
    });
    const ask: MessageCreateParamsNonStreaming = {
      model: 'sim/claude-beta',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'Hi' }],
    };
    await claudeCode.messages.create(ask);
    expect(w.sim.requests().at(-1)!.headers['anthropic-beta']).toBe(beta);
    // a model that does not forward it: the provider entry's own headers only
    await claudeCode.messages.create({ ...ask, model: 'sim/claude' });
    expect(w.sim.requests().at(-1)!.headers).not.toHaveProperty('anthropic-beta');
  });

  it("Claude Code's thinking: signed blocks plain and streamed, and its tool loop sending them back", async () => {
    const ask: MessageCreateParamsNonStreaming = {
      model: 'sim/claude',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [WEATHER],
    };
    const plain = await anthropic().messages.create(ask);
    expect(sent()).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 2000 }, max_tokens: 4000 });
    expect(plain.content[0]).toEqual(signedBlock);
    expect(plain.content.at(-1)!.type).toBe('tool_use');
    expect(plain.stop_reason).toBe('tool_use');

    const streamed = await anthropic().messages.stream(ask).finalMessage();
    expect(streamed.content[0]).toEqual(plain.content[0]);
    const toolUse = streamed.content.find(
      (b): b is Extract<ContentBlock, { type: 'tool_use' }> => b.type === 'tool_use',
    )!;

    const loop = (content: ContentBlock[]) =>
      anthropic().messages.create({
        ...ask,
        messages: [
          ask.messages[0]!,
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'snow' }] },
        ],
      });
    const next = await loop(streamed.content);
    expect(next.stop_reason).toBe('end_turn');
    expect(next.content[0]).toEqual(signedBlock);
    expect(sent().messages[1].content[0]).toEqual(streamed.content[0]);

    const forged = streamed.content.map((b) => (b.type === 'thinking' ? { ...b, signature: 'Zm9yZ2Vk' } : b));
    const refused = await loop(forged).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(APIError);
    expect(refused).toMatchObject({
      status: 502,
      error: { error: { details: { error_code: 'PROVIDER_ERROR' } } },
    });
  });

  it('a redacted block comes whole and goes back as it came, through both APIs', async () => {
    w.sim.script([{ match: { model: 'claude-sim' }, reply: { redactedThinking: true } }]);
    const redacted = { type: 'redacted_thinking', data: expect.stringMatching(/.+/) };
    const ask: MessageCreateParamsNonStreaming = {
      model: 'sim/claude',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [{ role: 'user', content: 'Weather in Lima?' }],
      tools: [WEATHER],
    };
    const streamed = await anthropic().messages.stream(ask).finalMessage();
    expect(streamed.content[0]).toEqual(redacted);
    const toolUse = streamed.content.find((b) => b.type === 'tool_use')!;
    await anthropic().messages.create({
      ...ask,
      messages: [
        ask.messages[0]!,
        { role: 'assistant', content: streamed.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'fog' }] },
      ],
    });
    expect(sent().messages[1].content[0]).toEqual(streamed.content[0]);

    const stream = await openai().chat.completions.create({
      model: 'sim/claude',
      messages: [{ role: 'user', content: 'Weather in Quito?' }],
      tools: [CHAT_WEATHER],
      reasoning_effort: 'low',
      stream: true,
    });
    const blocks: Json[] = [];
    for await (const chunk of stream)
      blocks.push(...((chunk.choices[0]?.delta as Loose)?.thinking_blocks ?? []));
    expect(blocks).toEqual([redacted]);
  });

  it("count_tokens counts an earlier turn's thinking by its text, not its signature or a redacted block", async () => {
    // Claude's signatures (and redacted data) are opaque base64, often longer than the thinking they sign
    const opaque = randomBytes(3_000).toString('base64');
    const count = (blocks: Array<Anthropic.ThinkingBlockParam | Anthropic.RedactedThinkingBlockParam>) =>
      anthropic().messages.countTokens({
        model: 'sim/claude',
        thinking: { type: 'enabled', budget_tokens: 2000 },
        messages: [
          { role: 'user', content: 'Weather?' },
          { role: 'assistant', content: [...blocks, { type: 'text', text: 'Sunny.' }] },
          { role: 'user', content: 'Thanks' },
        ],
      });
    const short = await count([{ type: 'thinking', thinking: 'Look it up.', signature: 'c2ln' }]);
    const long = await count([
      { type: 'thinking', thinking: 'Look it up.', signature: opaque },
      { type: 'redacted_thinking', data: opaque },
    ]);
    expect(long.input_tokens).toBe(short.input_tokens);
  });

  it('an OpenAI-protocol model never receives thinking or thinking_blocks', async () => {
    const blocks = [{ type: 'thinking', thinking: 'Earlier.', signature: 'c2ln' }];
    const answer = await w.call(
      'gateway',
      'POST',
      '/v1/chat/completions',
      { bearer: owner.token },
      {
        model: 'sim/gpt',
        thinking: { type: 'enabled', budget_tokens: 2000 },
        messages: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: 'Hello', thinking_blocks: blocks },
          { role: 'user', content: 'Again' },
        ],
      },
    );
    expect(answer.status).toBe(200);
    expect(sent()).not.toHaveProperty('thinking');
    expect(sent().messages[1]).toEqual({ role: 'assistant', content: 'Hello' });

    // and Claude Code's request, its earlier turn's signed block included, on the same model
    const message = await anthropic().messages.create({
      model: 'sim/gpt',
      max_tokens: 3000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: [
            { ...blocks[0]!, type: 'thinking' },
            { type: 'text', text: 'Hello' },
          ],
        },
        { role: 'user', content: 'Again' },
      ],
    });
    expect(message.content.at(-1)!.type).toBe('text');
    expect(JSON.stringify(sent())).not.toMatch(/thinking/);
  });
});
