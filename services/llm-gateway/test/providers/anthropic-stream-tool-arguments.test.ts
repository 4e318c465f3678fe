import { type ProviderSimulator, startProviderSimulator } from '@platform/testkit';
import { type ChatCompletionChunk, createProviderAdapter, type ProviderCall } from '../../src/providers';

/**
 * A tool without parameters: Anthropic streams its `tool_use` block with no `input_json_delta` (or an empty
 * one). The streamed arguments are still JSON, `{}`, as the plain answer's are and OpenAI's always are.
 */
describe('Anthropic stream: a tool call without arguments', () => {
  let sim: ProviderSimulator;
  beforeAll(async () => {
    sim = await startProviderSimulator({});
  });
  afterAll(() => sim.close());
  beforeEach(() => sim.reset());

  const clock = { now: () => new Date('2026-03-01T00:00:00Z') };
  const claude = () =>
    createProviderAdapter({ name: 'claude', type: 'anthropic', baseUrl: sim.anthropicBaseUrl }, { clock });
  const call: ProviderCall = {
    model: 'claude-sim',
    headers: {},
    timeoutMs: 2_000,
    signal: new AbortController().signal,
  };
  const nowTool = { type: 'function' as const, function: { name: 'now', description: 'The time' } };

  it("streams '{}' as the arguments, as the plain answer gives them", async () => {
    const reply = {
      reply: {
        toolCalls: [
          { name: 'now', arguments: '' },
          { name: 'now', arguments: '{"tz":"UTC"}' },
        ],
      },
    };
    sim.script([reply]);
    const ask = { model: 'x', tools: [nowTool], messages: [{ role: 'user' as const, content: 'Time?' }] };
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of claude().chatStream({ ...ask, stream: true }, call)) chunks.push(chunk);
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const args = (index: number) =>
      deltas
        .filter((d) => d.index === index)
        .map((d) => d.function?.arguments ?? '')
        .join('');
    expect([args(0), args(1)]).toEqual(['{}', '{"tz":"UTC"}']);

    sim.script([reply]);
    const plain = await claude().chat(ask, call);
    const calls = (
      plain.body.choices[0]!.message as { tool_calls: Array<{ function: { arguments: string } }> }
    ).tool_calls;
    expect(calls.map((c) => c.function.arguments)).toEqual(['{}', '{"tz":"UTC"}']);
  });
});
