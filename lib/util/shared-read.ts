/**
 * SharedRead lets concurrent callers share one read: a call while a read runs, or within
 * maxAgeMs of its start, gets that read's answer (a failed read is not shared after it fails).
 * The API key check uses it for its etcd read of the keys Secret, so a flood of unknown keys costs
 * the apiserver one quorum read per interval per host, not one per request. What it holds is one
 * answer for a moment, never a source of truth.
 */
export class SharedRead<T> {
  private readonly reads: SharedReads<T>;

  constructor(maxAgeMs: number, now: () => number) {
    this.reads = new SharedReads(maxAgeMs, now);
  }

  get(read: () => Promise<T>): Promise<T> {
    return this.reads.get("", read);
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

/**
 * NextRead lets concurrent callers share a read without getting an answer older than their call:
 * a call while no read runs starts one; a call while one runs waits for it and shares the next,
 * which starts as soon as it ends, with every caller that came meanwhile. A burst of callers
 * costs at most one read in flight and one waiting. claimFrom's fresh look at a drained pool uses
 * it: one consistent list per pool per host at a time, however many creates ask. `latest` is the
 * last answer and when its read started (callers may use it as a hint, never as the answer).
 */
export class NextRead<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;
  private last: { at: number; value: T } | undefined;
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  get(read: () => Promise<T>): Promise<T> {
    if (!this.running) return this.start(read);
    if (!this.queued) {
      const next = () => {
        this.queued = undefined;
        return this.start(read);
      };
      this.queued = this.running.then(next, next);
    }
    return this.queued;
  }

  /** busy says whether a read runs or waits. */
  get busy(): boolean {
    return this.running !== undefined || this.queued !== undefined;
  }

  get latest(): { at: number; value: T } | undefined {
    return this.last;
  }

  private start(read: () => Promise<T>): Promise<T> {
    const at = this.now();
    const answer = read();
    this.running = answer;
    const done = () => {
      if (this.running === answer) this.running = undefined;
    };
    answer.then((value) => {
      done();
      if (!this.last || this.last.at <= at) this.last = { at, value };
    }, done);
    return answer;
  }
}

/**
 * NextReads is NextRead per key (a pool's "namespace/name"). It forgets a key once no read of it
 * is under way and its latest answer is older than forgetMs.
 */
export class NextReads<T> {
  private readonly reads = new Map<string, NextRead<T>>();
  private readonly now: () => number;
  private readonly forgetMs: number;

  constructor(now: () => number, forgetMs = 10_000) {
    this.now = now;
    this.forgetMs = forgetMs;
  }

  get(key: string, read: () => Promise<T>): Promise<T> {
    const now = this.now();
    for (const [k, r] of this.reads)
      if (!r.busy && now - (r.latest?.at ?? Number.NEGATIVE_INFINITY) > this.forgetMs) this.reads.delete(k);
    const shared = this.reads.get(key) ?? new NextRead<T>(this.now);
    this.reads.set(key, shared);
    return shared.get(read);
  }

  /** latest is key's last answer and when its read started, if still remembered. */
  latest(key: string): { at: number; value: T } | undefined {
    return this.reads.get(key)?.latest;
  }
}
