import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { type BusHub, batchingChannel } from '@platform/bus';
import type { Logger } from '@platform/kernel';

/** How a child is started: this very program again (`node [execArgv] file`), told which service to be. */
export interface ChildEntry {
  file: string;
  execArgv: string[];
}

/** The message a child sends its parent once it listens. */
export interface ListeningMessage {
  platform: 'listening';
  url: string;
}

const isListening = (m: unknown): m is ListeningMessage =>
  typeof m === 'object' && m !== null && (m as { platform?: unknown }).platform === 'listening';

/** The environment variable that makes this program run one service instead of the whole platform. */
export const CHILD_SERVICE_ENV = 'PLATFORM_STANDALONE_SERVICE';

/**
 * glibc malloc settings, the same as the images' (`Dockerfile`): two arenas (decision 0077), and fixed mmap and
 * trim thresholds of 128 KiB (decision 0085). Without fixed thresholds glibc raises them after a large block is
 * freed (up to 32 MiB and 64 MiB), so that later large blocks (model buffers, zlib, parsed bodies) come from the
 * heap and their memory stays resident once freed: ~20-25 MiB per process here.
 */
export const NATIVE_MEMORY_ENV = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
} as const;

/** Where a service process is in its life (DATA_DIR/standalone.json tells each one's). */
export type ProcessState = 'starting' | 'running' | 'restarting' | 'stopping' | 'stopped';

const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 5_000;
/** a child that lived this long starts its restart delays from the minimum again */
const HEALTHY_AFTER_MS = 30_000;

/**
 * One service in its own process, supervised: started with the IPC bus to the parent's hub, restarted
 * with a growing delay when it dies unasked (same port, same data folder), stopped with SIGTERM so it
 * drains, then SIGKILL after a grace period.
 */
export class ServiceProcess {
  private child?: ChildProcess;
  private stopping = false;
  private restarts = 0;
  private restartTimer?: NodeJS.Timeout;
  private startedAt = 0;
  /** where the service listens, once it said so */
  url?: string;
  state: ProcessState = 'starting';

  constructor(
    readonly name: string,
    /** read at each start: a restart sees what the supervisor changed in it (the edge's picked PORT) */
    private readonly env: Record<string, string | undefined>,
    private readonly deps: {
      hub: BusHub;
      logger: Logger;
      entry: ChildEntry;
      /** called whenever its process or state changed: spawned, listening, exited, asked to stop */
      onChange?: () => void;
    },
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the process; resolves with its URL once it listens, rejects if it exits first. */
  start(): Promise<string> {
    const child = fork(this.deps.entry.file, [], {
      // glibc's settings of the images (decisions 0077, 0085): an operator's own values win
      env: { ...NATIVE_MEMORY_ENV, ...this.env, [CHILD_SERVICE_ENV]: this.name },
      execArgv: this.deps.entry.execArgv,
      // its own process group: a terminal's Ctrl-C reaches the parent only, which stops children in order
      detached: true,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    this.startedAt = Date.now();
    this.setState('starting');
    // the child's end batches too (parentProcessChannel): both ends read batches
    const detach = this.deps.hub.attach(
      batchingChannel({
        send: (message) => {
          // a child dying meanwhile (EPIPE): logged, not an 'error' event of the child
          if (child.connected)
            child.send(message, (err) => {
              if (err)
                this.deps.logger.warn({ child: this.name, err }, 'could not send to a service process');
            });
        },
        onMessage: (listener) => {
          child.on('message', listener);
          return () => child.off('message', listener);
        },
      }),
    );
    const listening = new Promise<string>((resolve, reject) => {
      const onMessage = (message: unknown) => {
        if (!isListening(message)) return;
        child.off('message', onMessage);
        this.url = message.url;
        this.setState('running');
        resolve(message.url);
      };
      child.on('message', onMessage);
      child.once('exit', (code, signal) =>
        reject(new Error(`${this.name} exited (${signal ?? code}) before listening`)),
      );
      child.once('error', reject);
    });
    // each one (a failed spawn, kill or send): logged, never an unhandled 'error' that would end the supervisor
    child.on('error', (err) => this.deps.logger.error({ child: this.name, err }, 'service process error'));
    child.once('exit', (code, signal) => {
      detach();
      if (this.child === child) this.child = undefined;
      if (this.stopping) this.setState('stopped');
      else this.restartAfterCrash(code, signal);
    });
    return listening;
  }

  private setState(state: ProcessState): void {
    this.state = state;
    this.deps.onChange?.();
  }

  private restartAfterCrash(code: number | null, signal: NodeJS.Signals | null): void {
    if (Date.now() - this.startedAt > HEALTHY_AFTER_MS) this.restarts = 0;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** this.restarts++);
    this.setState('restarting');
    this.deps.logger.error({ child: this.name, code, signal, restartInMs: delay }, 'service process died');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.start().then(
        (url) => this.deps.logger.info({ child: this.name, url, pid: this.pid }, 'service process restarted'),
        (err) => this.deps.logger.error({ child: this.name, err }, 'service process failed to restart'),
      );
    }, delay);
  }

  /** SIGTERM (the service drains in-flight requests), SIGKILL after `graceMs`; resolves once it exited. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      if (this.state !== 'stopped') this.setState('stopped');
      return;
    }
    const exited = once(child, 'exit');
    this.setState('stopping');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
