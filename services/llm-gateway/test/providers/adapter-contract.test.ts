import { type ProviderSimulator, startProviderSimulator } from '@platform/testkit';
import {
  type ChatCompletionRequest,
  createProviderAdapter,
  type ProviderAdapter,
  type ProviderCall,
} from '../../src/providers';
import { collect } from '../provider-fixtures';

/**
 * What the gateway relies on from every adapter, whatever the provider: one contract, run against the
 * mock, the OpenAI protocol (plain and Azure) and Anthropic, the last three over HTTP to the simulator.
 */
let sim: ProviderSimulator;
beforeAll(async () => {
  sim = await startProviderSimulator({ apiKey: 'k' });
});
afterAll(() => sim.close());

const clock = { now: () => new Date('2026-05-01T12:00:00Z') };
const engines: Array<[string, () => ProviderAdapter]> = [
  ['mock', () => createProviderAdapter({ name: 'mock', type: 'mock' }, { clock })],
  [
    'openai',
    () =>
      createProviderAdapter(
        { name: 'oai', type: 'openai', baseUrl: sim.openaiBaseUrl, apiKey: 'k' },
        { clock },
      ),
  ],
  [
    'azure',
    () =>
      createProviderAdapter(
        { name: 'az', type: 'openai', baseUrl: sim.url, apiKey: 'k', azure: { apiVersion: '2024-10-21' } },
        { clock },
      ),
  ],
  [
    'anthropic',
    () =>
      createProviderAdapter(
        { name: 'ant', type: 'anthropic', baseUrl: sim.anthropicBaseUrl, apiKey: 'k' },
        { clock },
      ),
  ],
];

const call = (signal = new AbortController().signal): ProviderCall => ({
  model: 'm-1',
  headers: {},
  timeoutMs: 10_000, // an answer expected: never a timeout on a loaded machine
  signal,
});
const ask: ChatCompletionRequest = {
  model: 'catalogue/id',
  messages: [{ role: 'user', content: 'Describe the sea in a few words' }],
};
const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
];

describe.each(engines)('provider adapter contract: %s', (_name, make) => {
  it('streams the same text and usage a plain call answers, usage last and only there', async () => {
    const adapter = make();
    const plain = await adapter.chat(ask, call());
    expect(plain.body.object).toBe('chat.completion');
    expect(plain.body.choices[0]!.finish_reason).toBe('stop');
    expect(plain.usage!.total_tokens).toBe(plain.usage!.prompt_tokens + plain.usage!.completion_tokens);
    expect(plain.usage!.completion_tokens).toBeGreaterThan(0);

    const chunks = await collect(adapter.chatStream(ask, call()));
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      plain.body.choices[0]!.message.content,
    );
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual(plain.usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === undefined || c.usage === null)).toBe(true);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
  });

  it('calls a named tool, plainly and streamed, with JSON arguments', async () => {
    const adapter = make();
    const body = {
      ...ask,
      tools,
      messages: [{ role: 'user' as const, content: 'Please call get_weather for Oslo' }],
    };
    const plain = await adapter.chat(body, call());
    const toolCall = plain.body.choices[0]!.message.tool_calls![0]!;
    expect(plain.body.choices[0]!.finish_reason).toBe('tool_calls');
    expect(toolCall.function.name).toBe('get_weather');
    expect(typeof JSON.parse(toolCall.function.arguments)).toBe('object');

    const chunks = await collect(adapter.chatStream(body, call()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather' } });
    expect(deltas[0]!.id).toBeTruthy();
    expect(deltas.map((d) => d.function?.arguments ?? '').join('')).toBe(toolCall.function.arguments);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('stops at max_tokens with finish_reason length', async () => {
    const { body, usage } = await make().chat({ ...ask, max_tokens: 2 }, call());
    expect(body.choices[0]!.finish_reason).toBe('length');
    expect(usage!.completion_tokens).toBe(2);
  });

  it('gives up at once, with the caller reason, when the call is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('client left'));
    await expect(make().chat(ask, call(controller.signal))).rejects.toThrow('client left');
    await expect(collect(make().chatStream(ask, call(controller.signal)))).rejects.toThrow('client left');
  });
});
