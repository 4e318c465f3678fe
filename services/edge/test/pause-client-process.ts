import http from 'node:http';

/**
 * A client in a process of its own, for tests that stall the edge's process: it goes on sending a request's body
 * while the test's process is blocked. Over the IPC channel it takes an `UploadScript`, sends the request's head and
 * the body's first part, says `pause` (the moment the test blocks its own process), sends the second part during the
 * stall and a third one, if any, once the test says `rest` (its stall is over), and answers with what the edge
 * answered.
 */
export interface UploadScript {
  url: string;
  headers: Record<string, string>;
  /** the body: the first part before `pause`, the second during the stall, a third after it */
  parts: [string, string] | [string, string, string];
}

export interface UploadAnswer {
  status: number;
  body: string;
}

process.on('message', (script: UploadScript | 'rest') => {
  if (script === 'rest') return;
  const req = http.request(script.url, { method: 'POST', headers: script.headers, agent: false }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () =>
      process.send?.({
        status: res.statusCode,
        body: Buffer.concat(chunks).toString('utf8'),
      } as UploadAnswer),
    );
  });
  req.on('error', (err) => process.send?.({ status: 0, body: String(err) } as UploadAnswer));
  req.write(script.parts[0]);
  // a moment later, so that the edge has read the first part and waits for the rest when its process stalls
  setTimeout(() => process.send?.('pause'), 100);
  setTimeout(() => {
    const [, second, third] = script.parts;
    if (third === undefined) return req.end(second);
    req.write(second);
    process.once('message', () => req.end(third));
  }, 400);
});
process.once('disconnect', () => process.exit(0));
