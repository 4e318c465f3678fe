import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { abortSignalOf, Cancellation } from './cancellation';
import { undiciTransport } from './http/transport';

describe('a cancellation', () => {
  it('aborts once, with its reason, calling each listener once and keeping none', () => {
    const cancel = new Cancellation();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const b = () => calls.push('b');
    cancel.addEventListener('abort', a, { once: true });
    cancel.addEventListener('abort', a, { once: true }); // the same listener twice counts once, as on an EventTarget
    cancel.addEventListener('abort', b, { once: true });
    cancel.removeEventListener('abort', b);
    const reason = new Error('client went away');
    cancel.abort(reason);
    cancel.abort(new Error('again'));
    expect(calls).toEqual(['a']);
    expect(cancel.aborted).toBe(true);
    expect(cancel.reason).toBe(reason);
    cancel.addEventListener('abort', a);
    expect(calls).toEqual(['a']);
  });

  it('gives an AbortError as the reason when none is named, as AbortController does', () => {
    const cancel = new Cancellation();
    cancel.abort();
    expect(cancel.reason).toMatchObject({ name: 'AbortError' });
  });

  it('is followed by the AbortSignal made for fetch, before or after it aborts', () => {
    const later = new Cancellation();
    const signal = abortSignalOf(later);
    expect(signal.aborted).toBe(false);
    later.abort(new Error('late'));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ message: 'late' });
    const already = new Cancellation();
    already.abort(new Error('early'));
    expect(abortSignalOf(already).reason).toMatchObject({ message: 'early' });
    const real = new AbortController().signal;
    expect(abortSignalOf(real)).toBe(real);
  });

  it("ends undici's request to a provider that never answers", async () => {
    const server = createServer(() => undefined); // reads the request, never answers
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const closed = new Promise<void>((resolve) => server.on('connection', (s) => s.on('close', resolve)));
    try {
      const cancel = new Cancellation();
      const answer = undiciTransport(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
        signal: cancel.signal,
      });
      setTimeout(() => cancel.abort(new Error('client went away')), 50);
      await expect(answer).rejects.toThrow('client went away');
      await closed; // the connection to the provider is dropped, not left waiting
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
