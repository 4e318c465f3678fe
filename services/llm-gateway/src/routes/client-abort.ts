import type { Request, Response } from 'express';
import { Cancellation } from '../providers/cancellation';

/** A cancellation of the provider call that fires when the client goes away before the answer ends. */
export function abortOnClose(req: Request, res: Response): Cancellation {
  const controller = new Cancellation();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  req.on('aborted', () => controller.abort());
  return controller;
}

/** The request id the kernel's middleware gave the request (`x-request-id`). */
export const requestIdOf = (req: Request): string => req.id ?? 'unknown';
