import { type ChildProcess, fork } from 'node:child_process';

/**
 * Keeps this process from running anything else for `ms`, as a long garbage collection or a starved container does:
 * neither timers nor sockets are looked at meanwhile.
 */
export function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

/** Whether a process of this id exists (signal 0 checks without sending anything). */
export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** `file` run with tsx in a process of its own, talking over IPC: the other party, which goes on while this one stalls. */
export function forkParty(file: string): ChildProcess {
  return fork(file, [], {
    execArgv: ['--require', 'tsx/cjs'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/** The party's first message: what it says once it is ready (its URL). One that exits first fails, naming `who`. */
export function partyReady<M>(party: ChildProcess, who: string): Promise<M> {
  return new Promise<M>((resolve, reject) => {
    party.once('message', (message) => resolve(message as M));
    party.once('exit', (code) => reject(new Error(`${who}'s process exited (${code})`)));
  });
}

/** Disconnects the party, which then exits, and waits for its exit. */
export async function stopParty(party: ChildProcess | undefined): Promise<void> {
  if (!party?.connected) return;
  const exited = new Promise((resolve) => party.once('exit', resolve));
  party.disconnect();
  await exited;
}
