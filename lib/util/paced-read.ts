/**
 * PacedRead shares reads that must not predate their caller, at a bounded rate. get(read)
 * answers with a read that starts at or after the call; reads never overlap and start at least
 * gapMs apart, and every caller that comes while one waits to start shares it. However many
 * callers come, and however fast, a host makes at most one such read per gapMs. The key check
 * reads the keys Secret this way for keys its shared read does not show (unknown keys, or keys
 * made a moment ago), and the console its sessions Secret.
 *
 * recent(maxAgeMs) is the last answer while its read began less than maxAgeMs ago: a caller may
 * answer from it, as from a SharedRead, and wait for a fresh read only when it does not serve.
 * forget() drops it (the console after it ended a session: no answer from before that counts).
 * What it holds is one answer for a moment, never a source of truth.
 */
export class PacedRead<T> {
  private lastStart = Number.NEGATIVE_INFINITY;
  private running: Promise<unknown> | undefined;
  private waiting: Promise<T> | undefined;
  private last: { at: number; value: T } | undefined;
  /** forgotAt: reads that began before it are answered to their callers but never kept. */
  private forgotAt = Number.NEGATIVE_INFINITY;
  private readonly gapMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(gapMs: number, now: () => number, sleep: (ms: number) => Promise<void> = delay) {
    this.gapMs = gapMs;
    this.now = now;
    this.sleep = sleep;
  }

  get(read: () => Promise<T>): Promise<T> {
    this.waiting ??= this.next(read);
    return this.waiting;
  }

  recent(maxAgeMs: number): { value: T } | undefined {
    const last = this.last;
    return last && this.now() - last.at < maxAgeMs ? { value: last.value } : undefined;
  }

  forget(): void {
    this.last = undefined;
    this.forgotAt = this.now();
  }

  private async next(read: () => Promise<T>): Promise<T> {
    // Suspends at least once, so get() has stored this promise before it can be cleared below.
    await this.running;
    const wait = this.lastStart + this.gapMs - this.now();
    if (wait > 0) await this.sleep(wait);
    // From here on, a caller starts the next read: this one may have begun before it asked.
    this.waiting = undefined;
    const at = this.now();
    this.lastStart = at;
    const answer = read();
    this.running = answer.then(
      () => undefined,
      () => undefined,
    );
    const value = await answer;
    if (at > this.forgotAt && (!this.last || this.last.at <= at)) this.last = { at, value };
    return value;
  }
}

/** delay resolves after ms milliseconds (setTimeout: Node and workerd alike). */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
