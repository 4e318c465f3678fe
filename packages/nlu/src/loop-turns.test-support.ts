/** Counts the event loop's turns while `work` runs: how often it yielded (tests of the sliced loaders). */
export async function loopTurnsDuring<T>(work: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let running = true;
  const spin = () => {
    turns++;
    if (running) setImmediate(spin);
  };
  setImmediate(spin);
  try {
    return { value: await work(), turns };
  } finally {
    running = false;
  }
}
