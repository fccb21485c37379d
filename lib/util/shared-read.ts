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
