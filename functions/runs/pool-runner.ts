import type { PoolKey } from "../../lib/triggers/audit-targets.ts";
import type { Log } from "../../lib/util/log.ts";
import type { PoolSnapshot } from "../steps/snapshot.ts";

/**
 * PoolRunner runs one pool's reconcile at a time in this process and coalesces triggers that
 * arrive meanwhile into a single rerun. It is an optimisation only: nothing is queued across
 * restarts and other processes may run the same pool concurrently (the steps are safe for that);
 * a trigger lost here is picked up by the next tick.
 */
/** Entry is one key's runs in flight: whether to go again, and how soon. */
interface Entry {
  again: boolean;
  urgent: boolean;
  /** hurriedAt is when a rerun last skipped the spacing (one may per minIntervalMs). */
  hurriedAt: number;
  hurry?: () => void;
  done: Promise<void>;
}

export class PoolRunner<Hint = PoolSnapshot> {
  private readonly running = new Map<string, Entry>();
  private readonly run: (key: PoolKey, hint?: Hint) => Promise<unknown>;
  private readonly log: Log;
  private readonly minIntervalMs: number;

  /**
   * minIntervalMs spaces the reruns of one key: a trigger during a run waits until that long
   * after the run started (0: rerun at once). It bounds how often a busy pool is listed whole.
   */
  constructor(run: (key: PoolKey, hint?: Hint) => Promise<unknown>, log: Log, minIntervalMs = 0) {
    this.run = run;
    this.log = log;
    this.minIntervalMs = minIntervalMs;
  }

  /**
   * trigger starts key's reconcile, with the caller's hint for its first run (a snapshot the tick
   * just read, the version an audit event reported), or asks the running one to go once more when
   * it ends; a rerun has no hint, so it reads afresh. An urgent trigger skips the spacing, once
   * per minIntervalMs: the rerun starts as soon as the current run ends (a pool whose replicas an
   * Env run just raised must not wait a second for its pods while creates wait for them), but a
   * key whose runs keep triggering themselves urgently (a write that never converges) still runs
   * at most about twice per interval.
   */
  trigger(key: PoolKey, hint?: Hint, urgent = false): Promise<void> {
    const current = this.running.get(key);
    if (current) {
      current.again = true;
      if (urgent && Date.now() - current.hurriedAt >= this.minIntervalMs) {
        current.urgent = true;
        current.hurry?.();
      }
      return current.done;
    }
    const entry: Entry = {
      again: false,
      urgent: false,
      hurriedAt: Number.NEGATIVE_INFINITY,
      done: Promise.resolve(),
    };
    // Registered before the first run starts: a trigger from inside it joins this entry.
    this.running.set(key, entry);
    entry.done = (async () => {
      try {
        let first: Hint | undefined = hint;
        do {
          entry.again = false;
          entry.urgent = false;
          const snap = first;
          first = undefined;
          const started = Date.now();
          await this.run(key, snap).catch((err: unknown) =>
            this.log.warn({ pool: key, err: String(err) }, "reconcile failed"),
          );
          const wait = started + this.minIntervalMs - Date.now();
          if (entry.again && !entry.urgent && wait > 0)
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, wait);
              entry.hurry = () => {
                clearTimeout(timer);
                resolve();
              };
            });
          if (entry.urgent && wait > 0) entry.hurriedAt = Date.now();
          delete entry.hurry;
        } while (entry.again);
      } finally {
        this.running.delete(key);
      }
    })();
    return entry.done;
  }

  /** idle resolves when nothing is running (for graceful shutdown and tests). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running.values()].map((e) => e.done));
  }
}
