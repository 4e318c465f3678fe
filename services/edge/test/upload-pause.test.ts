import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { forkParty, stall, stopParty } from '@platform/testkit';
import type { UploadAnswer, UploadScript } from './pause-client-process';
import {
  accessToken,
  bearer,
  type FakeAuth,
  principalOf,
  request,
  startEdge,
  startFakeAuth,
  startUpstream,
  type TestEdge,
  type Upstream,
} from './support';

/**
 * When the edge's own process stalls past the wait for a request's body (a long garbage collection, a starved
 * container) while the client sends it in time, the request is forwarded whole: the bytes that arrived during the
 * stall are read before the client is taken as silent. The client runs in a process of its own, which goes on sending
 * while the test blocks this one (the edge's) for longer than the wait.
 */
describe("a request body that arrived while the edge's process stalled", () => {
  let client: ChildProcess;
  let auth: FakeAuth;
  let upstream: Upstream;
  let edge: TestEdge;
  const token = accessToken();

  beforeAll(async () => {
    client = forkParty(path.join(__dirname, 'pause-client-process.ts'));
    auth = await startFakeAuth();
    auth.state.answers.set(token, () => ({
      principal: principalOf({}),
      expiresAt: null,
      cacheTtlSeconds: 600,
    }));
    upstream = await startUpstream('llm-gateway');
    edge = await startEdge({
      authUrl: auth.url,
      llmQuotaUrl: upstream.url,
      legacyUrl: upstream.url,
      // a body's wait is 1 s, the stalls below last 3 s; llm-gateway's own answer has the default 300 s
      env: { LLM_GATEWAY_URL: upstream.url, UPSTREAM_TIMEOUT_MS: '1000' },
    });
    // the credential's answer cached: no lookup waits between the request's head and its body
    expect((await request(edge.url, '/llm/v1/x', { headers: bearer(token) })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await edge?.close();
    await upstream?.close();
    await auth?.close();
    await stopParty(client);
  });

  /** the client's upload, this process stalled 3 s once the client has sent the first part */
  const upload = async (headers: Record<string, string>, parts: UploadScript['parts']) => {
    let stalled = false;
    const answer = new Promise<UploadAnswer>((resolve) => {
      const onMessage = (m: unknown) => {
        if (m === 'pause') {
          setImmediate(() => {
            stall(3_000);
            stalled = true;
            // a turn later: the edge has read what came during the stall, and judged its wait, before the rest comes
            setImmediate(() => client.send('rest'));
          });
          return;
        }
        client.off('message', onMessage);
        resolve(m as UploadAnswer);
      };
      client.on('message', onMessage);
    });
    client.send({
      url: `${edge.url}/llm/v1/x`,
      headers: { ...bearer(token), 'content-type': 'application/json', ...headers },
      parts,
    } satisfies UploadScript);
    const { status, body } = await answer;
    expect(stalled).toBe(true);
    return { status, echoed: status === 200 ? JSON.parse(body).body : body };
  };

  it('a body of known length whose rest came within the wait while the edge stalled past it is forwarded, not a 408', async () => {
    const parts: [string, string] = ['{"prompt":"first half', ' second half"}'];
    const length = Buffer.byteLength(parts.join(''));
    expect(await upload({ 'content-length': String(length) }, parts)).toEqual({
      status: 200,
      echoed: parts.join(''),
    });
  }, 60_000);

  it('a streamed body whose next chunk came within the wait while the edge stalled past it is forwarded, not a 408', async () => {
    const parts: [string, string] = ['{"prompt":"first half', ' second half"}'];
    expect(await upload({ 'transfer-encoding': 'chunked' }, parts)).toEqual({
      status: 200,
      echoed: parts.join(''),
    });
  }, 60_000);

  it('a streamed body that goes on after the chunk that came while the edge stalled past the wait is forwarded, not a 408', async () => {
    const parts: UploadScript['parts'] = ['{"prompt":"first third', ' second third', ' last third"}'];
    expect(await upload({ 'transfer-encoding': 'chunked' }, parts)).toEqual({
      status: 200,
      echoed: parts.join(''),
    });
  }, 60_000);
});
