import { IncomingMessage, ServerResponse } from 'node:http';
import type { Express } from 'express';

/** The classes a node server builds each request and response with (`http.createServer`'s options). */
export interface ServerMessages {
  IncomingMessage: typeof IncomingMessage;
  ServerResponse: typeof ServerResponse;
}

/** node's constructor, building objects whose prototype is `prototype` (node's are plain functions, not classes) */
function withPrototype<T extends typeof IncomingMessage | typeof ServerResponse>(
  base: T,
  prototype: object,
): T {
  function Message(this: object, ...args: unknown[]) {
    Reflect.apply(base, this, args);
  }
  Message.prototype = prototype;
  return Message as unknown as T;
}

/**
 * Requests and responses born with the express app's prototypes. Express 5 gives every request its
 * app's prototypes with `Object.setPrototypeOf` (`app.handle`); on objects built with them already, that
 * call changes nothing. Changing the prototype of a live object made V8 keep every request's objects
 * through young-generation collections: each service promoted ~12 KB per request to old space (~23 KB
 * on the gateway's chat path), hence frequent scavenges and mark-compacts under load (decision 0083;
 * expressjs/express#5998 describes the same remedy).
 */
export function expressMessages(app: Express): ServerMessages {
  return {
    IncomingMessage: withPrototype(IncomingMessage, app.request),
    ServerResponse: withPrototype(ServerResponse, app.response),
  };
}
