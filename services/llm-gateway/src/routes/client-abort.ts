import type { Request, Response } from 'express';
import { Cancellation } from '../providers/cancellation';

/**
 * A cancellation of the provider call that fires when the client goes away before the answer ends: at once, or
 * `lingerMs()` later when that says the answer is all but over (a stream's usage report still to come). A client
 * already gone when it is set up (it left during admission) has it aborted from the start.
 */
export function abortOnClose(req: Request, res: Response, lingerMs: () => number = () => 0): Cancellation {
  const controller = new Cancellation();
  const gone = () => {
    const linger = lingerMs();
    if (linger > 0) setTimeout(() => controller.abort(), linger).unref();
    else controller.abort();
  };
  // a client that left while its request was admitted (its close is past): nothing is called for it
  if (res.destroyed && !res.writableFinished) {
    controller.abort();
    return controller;
  }
  res.on('close', () => {
    if (!res.writableFinished) gone();
  });
  req.on('aborted', gone);
  return controller;
}

/** The request id the kernel's middleware gave the request (`x-request-id`). */
export const requestIdOf = (req: Request): string => req.id ?? 'unknown';
