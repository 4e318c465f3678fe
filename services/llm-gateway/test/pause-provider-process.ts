import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type SimulatorRule, startProviderSimulator } from '@platform/testkit';

/**
 * The provider simulator and llm-quota's settings read in a process of their own, for tests that stall the gateway's
 * process: they go on answering while the test's process is blocked. Over the IPC channel it takes a `PauseScript`
 * (answering `scripted`) and says `pause` when a provider request arrives (`pauseOn: 'request'`), when a settings
 * read arrives (`pauseOn: 'settings'`), or once it has sent a stream frame matching the pattern `pauseOn.frame`: the
 * moment the test blocks its own process.
 */
export interface PauseScript {
  rules: SimulatorRule[];
  pauseOn: 'request' | 'settings' | { frame: string };
  /** what llm-quota answers for every organization (its `orgSlug` the one asked about) */
  settings: object;
  /** how long llm-quota takes to answer */
  settingsLatencyMs?: number;
}

async function main() {
  const send = (message: unknown) => process.send?.(message);
  let script: PauseScript | null = null;
  /** the script's moment to pause has not come yet */
  let armed = false;
  const pause = (at: 'request' | 'settings' | { frame: string }) => {
    const on = script?.pauseOn;
    if (!armed || !on) return;
    if (typeof on === 'string' ? on !== at : typeof at === 'string' || !new RegExp(on.frame).test(at.frame))
      return;
    armed = false;
    // a moment later, so that the bytes just written reach the gateway's process before this message does
    setTimeout(send, 30, 'pause');
  };
  const sim = await startProviderSimulator({
    observe: { request: () => pause('request'), frame: (_index, frame) => pause({ frame: String(frame) }) },
  });
  const quota = http.createServer((req, res) => {
    const slug = decodeURIComponent(/\/internal\/orgs\/([^/]+)\//.exec(req.url ?? '')?.[1] ?? '');
    pause('settings');
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...script?.settings, orgSlug: slug }));
    }, script?.settingsLatencyMs ?? 0);
  });
  await new Promise<void>((resolve) => quota.listen(0, '127.0.0.1', resolve));
  process.on('message', (next: PauseScript) => {
    script = next;
    armed = true;
    sim.script(next.rules);
    send('scripted');
  });
  process.once('disconnect', () => {
    quota.close();
    void sim.close().then(() => process.exit(0));
  });
  send({ url: sim.url, quotaUrl: `http://127.0.0.1:${(quota.address() as AddressInfo).port}` });
}

void main();
