import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInProcessBus } from '@platform/bus';
import { type LlmCompletionEvent, Subjects } from '@platform/contracts';
import { createEmbeddedStore } from '@platform/store';
import { type ProviderSimulator, startProviderSimulator, waitFor } from '@platform/testkit';
import { fakeQuota, orgSettings, ownerHeaders, startGatewayService } from '../../test/gateway-instance';
import { silentWav } from './wav-fixture';

/**
 * A client that leaves once its request is read, while the gateway still admits it (llm-quota's answer not in yet):
 * no provider is called for it. The cancellation was set up after admission, when the request had already closed,
 * and never fired: the provider transcribed (or answered) for nobody, and the organization was billed for it.
 */
describe('a client gone before the provider call', () => {
  let sim: ProviderSimulator;
  let gateway: Awaited<ReturnType<typeof startGatewayService>>;
  let server: Server;
  const bus = createInProcessBus();
  /** llm-quota's answers wait for this, once a request is being admitted */
  let admitting: (() => void) | null = null;
  let admit = Promise.resolve();
  const closed = new Set<string>();
  const events: LlmCompletionEvent[] = [];
  bus.subscribe(Subjects.llmCompletion, (e) => {
    events.push(e as LlmCompletionEvent);
  });
  const eventOf = (requestId: string) =>
    waitFor(() => events.find((e) => e.requestId === requestId), { what: `the usage event of ${requestId}` });

  beforeAll(async () => {
    sim = await startProviderSimulator({ port: 0 });
    const settings = fakeQuota((slug) => orgSettings(slug));
    gateway = await startGatewayService({
      file: {
        providers: [{ name: 'sim', type: 'openai', baseUrl: sim.openaiBaseUrl, apiKey: 'sk-sim' }],
        models: [
          { model_id: 'chat/sim', type: 'completion', provider_config: { provider: 'sim', model: 'gpt-x' } },
          {
            model_id: 'audio/sim',
            type: 'audio_transcription',
            provider_config: { provider: 'sim', model: 'whisper-x' },
          },
        ],
      },
      store: createEmbeddedStore(),
      bus,
      fetch: async (input, init) => {
        if (String(input).includes('/internal/orgs/')) {
          admitting?.();
          await admit;
        }
        return settings(input, init);
      },
    });
    server = createServer(gateway.service.handler);
    // the answer's close: the request's own comes as soon as its body is read
    server.on('request', (req, res) =>
      res.once('close', () => closed.add(String(req.headers['x-request-id']))),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }, 30_000);
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await gateway?.stop();
    await bus.close();
    await sim?.close();
  });

  /** sends the whole request, leaves while it is being admitted, then lets admission go on */
  async function leaveWhileAdmitted(slug: string, path: string, type: string, body: Buffer) {
    let release!: () => void;
    admit = new Promise((resolve) => {
      release = resolve;
    });
    const reading = new Promise<void>((resolve) => {
      admitting = resolve;
    });
    const id = `gone-${slug}`;
    const { port } = server.address() as AddressInfo;
    const req = request({
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      headers: {
        ...ownerHeaders(slug),
        'content-type': type,
        'content-length': body.length,
        'x-request-id': id,
      },
    });
    req.on('error', () => undefined);
    req.end(body);
    await reading;
    req.destroy();
    await waitFor(() => closed.has(id), { what: 'the gateway to see the client leave' });
    release();
    admitting = null;
  }

  it('neither a transcription nor a chat completion reaches the provider', async () => {
    const boundary = 'gone-boundary';
    const upload = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\naudio/sim\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
      ),
      silentWav(2),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    await leaveWhileAdmitted(
      'gone-audio',
      '/v1/audio/transcriptions',
      `multipart/form-data; boundary=${boundary}`,
      upload,
    );
    const chat = JSON.stringify({ model: 'chat/sim', messages: [{ role: 'user', content: 'hello' }] });
    await leaveWhileAdmitted('gone-chat', '/v1/chat/completions', 'application/json', Buffer.from(chat));
    // each request is over once its usage event is out: cancelled, nothing consumed, no provider called
    for (const id of ['gone-gone-audio', 'gone-gone-chat'])
      expect(await eventOf(id)).toMatchObject({ outcome: 'client_cancelled', usage: { total_tokens: 0 } });
    expect(sim.requests()).toEqual([]);
  });
});
