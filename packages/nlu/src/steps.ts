/**
 * Resumable work: a model is loaded as a generator that yields between steps of a few thousand elements, so that a
 * service can adopt a large model without holding its event loop (docs/decisions/0021, 0081).
 */
import { performance } from 'node:perf_hooks';

export type Steps<T> = Generator<void, T, void>;

/** Runs resumable steps to the end, synchronously. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Runs resumable steps in slices of about `sliceMs`, with a `setImmediate` between them. */
export async function runStepsInSlices<T>(steps: Steps<T>, sliceMs = 3): Promise<T> {
  let sliceStart = performance.now();
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}
