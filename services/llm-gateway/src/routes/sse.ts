import type { ServerResponse } from 'node:http';

/** Starts an OpenAI-style server-sent events answer (no buffering by proxies). */
export function startEventStream(res: ServerResponse, headers: Record<string, string>): void {
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
}

/** one `data:` event; nothing once the answer ended or its client left */
export const writeEvent = (res: ServerResponse, data: unknown): void => {
  if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(data)}\n\n`);
};

export function endEventStream(res: ServerResponse): void {
  if (!res.writableEnded && !res.destroyed) res.end('data: [DONE]\n\n');
}

/** one named event (`event:` then `data:`), as the Responses API streams them; nothing once the answer ended */
export const writeNamedEvent = (res: ServerResponse, event: string, data: unknown): void => {
  if (!res.writableEnded && !res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
};

/** the end of a stream that has no `[DONE]` (the Responses API's ends with its terminal event) */
export function endNamedEventStream(res: ServerResponse): void {
  if (!res.writableEnded && !res.destroyed) res.end();
}
