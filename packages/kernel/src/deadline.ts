/**
 * `setTimeout` for a deadline on another party's bytes (a provider's, auth's, llm-quota's, a client's): once the
 * time is up, `expire` runs one turn of the event loop later, after the bytes that arrived in the meantime were read.
 * When the process itself stalls past the deadline (a long garbage collection, a starved container), Node runs
 * expired timers before it reads its sockets, so a party that answered in time would be taken as silent. `expire` may
 * still run after `clearTimeout` of a deadline whose time is already up: it must do nothing when the wait is over.
 */
export function setDeadline(expire: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(setImmediate, ms, expire);
}

/**
 * A signal for a fetch of another party's answer, aborted with `reason()` once `ms` are up by `setDeadline`'s rule: an
 * `AbortSignal.timeout` would abort before the answer that arrived while this process stalled is read. `end` it once
 * the answer is read: it is then never aborted.
 */
export function deadlineSignal(ms: number, reason: () => Error): { signal: AbortSignal; end(): void } {
  const controller = new AbortController();
  let over = false;
  const timer = setDeadline(() => {
    if (!over) controller.abort(reason());
  }, ms);
  return {
    signal: controller.signal,
    end() {
      over = true;
      clearTimeout(timer);
    },
  };
}
