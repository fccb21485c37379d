/**
 * SharedRead lets concurrent callers share one read: a call while a read runs, or within
 * maxAgeMs of its start, gets that read's answer (a failed read is not shared after it fails).
 * The API key check uses it for its etcd read of the keys Secret, so a flood of unknown keys costs
 * the apiserver one quorum read per interval per host, not one per request. What it holds is one
 * answer for a moment, never a source of truth.
 */
export class SharedRead<T> {
  private last: { at: number; answer: Promise<T> } | undefined;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(maxAgeMs: number, now: () => number) {
    this.maxAgeMs = maxAgeMs;
    this.now = now;
  }

  get(read: () => Promise<T>): Promise<T> {
    const at = this.now();
    if (this.last && at - this.last.at < this.maxAgeMs) return this.last.answer;
    const answer = read();
    this.last = { at, answer };
    answer.catch(() => {
      if (this.last?.answer === answer) this.last = undefined;
    });
    return answer;
  }
}

/**
 * SharedReads is SharedRead per key (a pool's "namespace/name"): concurrent callers for the same
 * key within maxAgeMs of a read's start share its answer. Entries older than maxAgeMs are dropped
 * as new keys come in, so it holds at most the keys read in the last interval.
 */
export class SharedReads<T> {
  private readonly last = new Map<string, { at: number; answer: Promise<T> }>();
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(maxAgeMs: number, now: () => number) {
    this.maxAgeMs = maxAgeMs;
    this.now = now;
  }

  get(key: string, read: () => Promise<T>): Promise<T> {
    const at = this.now();
    const last = this.last.get(key);
    if (last && at - last.at < this.maxAgeMs) return last.answer;
    if (!last) for (const [k, v] of this.last) if (at - v.at >= this.maxAgeMs) this.last.delete(k);
    const answer = read();
    const entry = { at, answer };
    this.last.set(key, entry);
    answer.catch(() => {
      if (this.last.get(key) === entry) this.last.delete(key);
    });
    return answer;
  }
}
