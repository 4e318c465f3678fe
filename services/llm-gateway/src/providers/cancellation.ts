/**
 * What the provider layer needs of a cancellation: the part of `AbortSignal` it uses, which undici's
 * `request` accepts as its `signal` too. An `AbortSignal` fits.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * The part of `AbortController` the gateway's request path uses, controller and signal in one object.
 * Node 20 builds every `AbortSignal` with `Object.setPrototypeOf`, which makes V8 keep it, and the
 * provider call its listeners reach, through young-generation collections: the gateway's two signals per
 * request were the largest share of what it still promoted to old space (decision 0083).
 */
export class Cancellation implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: Array<() => void> = [];

  get signal(): CancelSignal {
    return this;
  }

  /** as `AbortController.abort`: once; every listener runs once, then none is kept */
  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }

  /** every listener is called once at most (as with `{ once: true }`, which is the only use here) */
  addEventListener(_type: 'abort', listener: () => void, _options?: { once?: boolean }): void {
    if (!this.aborted && !this.listeners.includes(listener)) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at >= 0) this.listeners.splice(at, 1);
  }
}

/** A real `AbortSignal` that follows `cancel`, for `fetch` (scripted providers in tests, multipart uploads). */
export function abortSignalOf(cancel: CancelSignal): AbortSignal {
  if (cancel instanceof AbortSignal) return cancel;
  const controller = new AbortController();
  if (cancel.aborted) controller.abort(cancel.reason);
  else cancel.addEventListener('abort', () => controller.abort(cancel.reason), { once: true });
  return controller.signal;
}
