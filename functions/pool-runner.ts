import type { Log } from "../lib/log.ts";
import type { PoolKey } from "../lib/triggers/audit-targets.ts";

/**
 * PoolRunner runs one pool's reconcile at a time in this process and coalesces triggers that
 * arrive meanwhile into a single rerun. It is an optimisation only: nothing is queued across
 * restarts and other processes may run the same pool concurrently (the steps are safe for that);
 * a trigger lost here is picked up by the next tick.
 */
export class PoolRunner {
  private readonly running = new Map<PoolKey, { again: boolean; done: Promise<void> }>();
  private readonly run: (key: PoolKey) => Promise<unknown>;
  private readonly log: Log;

  constructor(run: (key: PoolKey) => Promise<unknown>, log: Log) {
    this.run = run;
    this.log = log;
  }

  /** trigger starts key's reconcile, or asks the running one to go once more when it ends. */
  trigger(key: PoolKey): Promise<void> {
    const current = this.running.get(key);
    if (current) {
      current.again = true;
      return current.done;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        do {
          entry.again = false;
          await this.run(key).catch((err: unknown) =>
            this.log.warn({ pool: key, err: String(err) }, "reconcile failed"),
          );
        } while (entry.again);
      } finally {
        this.running.delete(key);
      }
    })();
    this.running.set(key, entry);
    return entry.done;
  }

  /** idle resolves when nothing is running (for graceful shutdown and tests). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((e) => e.done));
  }
}
