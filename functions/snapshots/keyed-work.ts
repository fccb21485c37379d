/** RETRY_MS are the pauses before a key whose work failed is tried again, growing while it keeps failing. */
const RETRY_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000] as const;

/** KeyedWorkOptions: how many keys run at once, and the pauses after a failure (tests shorten them). */
export interface KeyedWorkOptions {
  parallel: number;
  retryMs?: readonly number[];
  /** failed hears a key's work that threw (it is tried again after a pause). */
  failed: (key: string, e: unknown) => void;
}

/**
 * KeyedWork runs one handler per key, never two at once for the same key and at most `parallel`
 * keys at a time, as a controller's work queue does: a key asked for again while it runs is run
 * once more after it (the handler reads the object afresh, so one more run covers every ask in
 * between), and a run that throws is tried again after a growing pause. The snapshot agent keys
 * by "namespace/name", so one snapshot's commit and its status writes never race each other.
 */
export class KeyedWork {
  private readonly queued: string[] = [];
  private readonly running = new Set<string>();
  private readonly again = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly controller = new AbortController();
  private readonly runs = new Set<Promise<void>>();
  private idleWaiters: (() => void)[] = [];

  private readonly handle: (key: string, signal: AbortSignal) => Promise<void>;
  private readonly options: KeyedWorkOptions;

  constructor(handle: (key: string, signal: AbortSignal) => Promise<void>, options: KeyedWorkOptions) {
    this.handle = handle;
    this.options = options;
  }

  /** add asks for the key's work (again). */
  add(key: string): void {
    if (this.controller.signal.aborted) return;
    const retry = this.retries.get(key);
    if (retry) {
      clearTimeout(retry);
      this.retries.delete(key);
    }
    if (this.running.has(key)) this.again.add(key);
    else if (!this.queued.includes(key)) this.queued.push(key);
    this.pump();
  }

  /** idle resolves once nothing is queued or running (a retry waiting for its pause is not running). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** stop takes no more work, aborts the runs under way (their signal) and waits for them to end. */
  async stop(): Promise<void> {
    this.controller.abort();
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    this.queued.length = 0;
    await Promise.allSettled([...this.runs]);
  }

  private isIdle(): boolean {
    return this.queued.length === 0 && this.running.size === 0;
  }

  private pump(): void {
    while (this.running.size < this.options.parallel && this.queued.length > 0) {
      const key = this.queued.shift() as string;
      this.running.add(key);
      const run = this.run(key).finally(() => {
        this.runs.delete(run);
        this.running.delete(key);
        if (this.again.delete(key)) this.add(key);
        this.pump();
        if (this.isIdle()) for (const resolve of this.idleWaiters.splice(0)) resolve();
      });
      this.runs.add(run);
    }
  }

  private async run(key: string): Promise<void> {
    const { signal } = this.controller;
    try {
      await this.handle(key, signal);
      this.failures.delete(key);
    } catch (e) {
      if (signal.aborted) return;
      this.options.failed(key, e);
      const n = this.failures.get(key) ?? 0;
      this.failures.set(key, n + 1);
      const delays = this.options.retryMs ?? RETRY_MS;
      const ms = delays[Math.min(n, delays.length - 1)] ?? 60_000;
      // A later ask (an event) cancels the pause: the object changed, so it is worth a look at once.
      this.retries.set(
        key,
        setTimeout(() => {
          this.retries.delete(key);
          this.add(key);
        }, ms),
      );
    }
  }
}
