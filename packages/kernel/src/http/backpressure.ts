import type { ServerResponse } from 'node:http';

/** until the client has taken what was written, or has left */
const drained = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });

/**
 * Writes a piece of a streamed answer and, when the client is slower to take it than the answer is made, waits until
 * it has taken what was written or has left: nothing more is held than one piece. False once the client has left
 * (the response is destroyed), or when the response is already ended (then nothing is written: Node would emit an
 * error nobody listens to): the caller stops making the answer.
 */
export async function writeWithBackpressure(
  res: ServerResponse,
  chunk: string | Uint8Array,
): Promise<boolean> {
  if (res.writableEnded) return false;
  if (!res.write(chunk) && !res.destroyed) await drained(res);
  return !res.destroyed;
}
