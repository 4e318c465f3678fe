/**
 * Forces a full garbage collection in another Node process through its inspector and prints that
 * process's memory afterwards as one JSON line: `node --experimental-websocket heap-probe.mjs <ws url>`.
 * The chaos harness opens the inspector with SIGUSR1 (every Node process has that handler); nothing in
 * the services knows about it. Exits 1 if the inspector does not answer within 30 s.
 */
const url = process.argv[2];
const socket = new WebSocket(url);
const pending = new Map();
let nextId = 1;
const send = (method, params = {}) =>
  new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    socket.send(JSON.stringify({ id, method, params }));
  });
socket.addEventListener('message', (event) => {
  const message = JSON.parse(String(event.data));
  const waiter = pending.get(message.id);
  if (!waiter) return;
  pending.delete(message.id);
  if (message.error) waiter.reject(new Error(message.error.message));
  else waiter.resolve(message.result);
});
const timer = setTimeout(() => {
  console.error('the inspector did not answer');
  process.exit(1);
}, 30_000);
socket.addEventListener('open', async () => {
  try {
    await send('HeapProfiler.collectGarbage');
    const { result } = await send('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    });
    console.log(result.value);
    clearTimeout(timer);
    socket.close();
  } catch (err) {
    console.error(err);
    process.exit(1);
  }
});
socket.addEventListener('error', () => {
  console.error(`cannot reach ${url}`);
  process.exit(1);
});
