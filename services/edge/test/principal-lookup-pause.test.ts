import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { forkParty, partyReady, stall, stopParty } from '@platform/testkit';
import {
  accessToken,
  bearer,
  request,
  startEdge,
  startUpstream,
  type TestEdge,
  type Upstream,
} from './support';

/**
 * When the edge's own process stalls past the principal lookup's timeout (a long garbage collection, a starved
 * container) while auth answers in time, the credential is taken as valid: the answer that arrived during the stall
 * is read before the timeout is judged. Auth runs in a process of its own, which goes on answering while the test
 * blocks this one (the edge's) for longer than the timeout.
 */
describe("auth's answer that arrived while the edge's process stalled", () => {
  let auth: ChildProcess;
  let upstream: Upstream;
  let edge: TestEdge;

  beforeAll(async () => {
    auth = forkParty(path.join(__dirname, 'pause-auth-process.ts'));
    const { url } = await partyReady<{ url: string }>(auth, 'auth');
    upstream = await startUpstream('llm');
    // the lookup's timeout is the default 5 s: the stall below outlasts it
    edge = await startEdge({ authUrl: url, llmQuotaUrl: upstream.url, legacyUrl: upstream.url });
  }, 60_000);
  afterAll(async () => {
    await edge?.close();
    await upstream?.close();
    await stopParty(auth);
  });

  it('a credential auth found valid within the timeout while the edge stalled past it is served, not a 503', async () => {
    let stalled = false;
    auth.once('message', (m) => {
      if (m !== 'pause') return;
      // a turn later: the edge's request to auth has been sent whole
      setImmediate(() => {
        stall(6_000);
        stalled = true;
      });
    });
    const res = await request(edge.url, '/llm/v1/x', { headers: bearer(accessToken()) });
    expect(stalled).toBe(true);
    expect({ status: res.status, user: res.json?.headers?.['x-platform-user-id'] }).toEqual({
      status: 200,
      user: 'user-paused',
    });
  }, 60_000);
});
