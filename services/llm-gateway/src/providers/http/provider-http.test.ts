import { ProviderError } from '../types';
import { type ProviderHttp, sendForJson } from './provider-http';
import type { ProviderResponse } from './transport';

/** An answer of `status` whose body is `total` bytes of `fill` in 64 KiB chunks, made as they are read. */
function answer(status: number, total: number, start: string) {
  const read = { bytes: 0, cancelled: false };
  async function* body(): AsyncGenerator<Uint8Array> {
    for (let sent = 0; sent < total; sent += 65_536) {
      const chunk = Buffer.alloc(Math.min(65_536, total - sent), ' ');
      if (sent === 0) chunk.write(start);
      read.bytes += chunk.length;
      yield chunk;
    }
  }
  let chunks: AsyncGenerator<Uint8Array> | undefined;
  const res: ProviderResponse = {
    status,
    ok: status >= 200 && status < 300,
    header: (name) => (name === 'content-type' ? 'text/html' : null),
    async text() {
      const parts: Uint8Array[] = [];
      for await (const chunk of body()) parts.push(chunk);
      return Buffer.concat(parts).toString('utf8');
    },
    chunks: () => {
      chunks = body();
      return chunks;
    },
    async cancel() {
      read.cancelled = true;
      await chunks?.return(undefined);
    },
  };
  return { res, read };
}

const http = (res: ProviderResponse): ProviderHttp => ({
  provider: 'odd',
  send: async () => res,
  clock: { now: () => new Date() },
  readError: () => ({ type: null, message: null }),
});
const call = { model: 'm', headers: {}, timeoutMs: 60_000, signal: new AbortController().signal };

describe('a provider error answer', () => {
  it('is read up to its first 64 KiB, never whole: a 32 MiB error page is not held in memory', async () => {
    const { res, read } = answer(500, 32 * 1024 * 1024, '<html>upstream proxy failed</html>');
    const err = await sendForJson(http(res), call, { url: 'http://odd/v1/x', headers: {} }).catch((e) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ upstreamStatus: 500, providerErrorType: 'http_500' });
    expect((err as Error).message).toContain('upstream proxy failed');
    expect(read.bytes).toBeLessThanOrEqual(128 * 1024);
    expect(read.cancelled).toBe(true);
  });
});
