// Which samples a sandbox's series drops when it passes its cap: decided here, from the series'
// times alone, so every backend thins the same series the same way.

/** USAGE_SAMPLES_PER_SANDBOX bounds one sandbox's stored series (4 hours at one sample per 10 s). */
export const USAGE_SAMPLES_PER_SANDBOX = 1440;

/**
 * thinSeries lists the samples (their `at`, RFC 3339) to drop from a series of more than `cap`
 * (given oldest first), or none at or under it. A long-lived sandbox's series must still cover
 * its whole life, so the oldest samples are never simply cut: the newest quarter of the cap stays
 * at full resolution (the last minutes are what a caller looks at most), and the older samples
 * are thinned to half the cap by dropping, one at a time, the sample whose two neighbours are
 * closest together (the earliest of equals): dense stretches lose samples first, and the widest
 * gap the thinning leaves is as small as it can make it. The first and last samples stay, and so
 * the whole span; what is left is 3/4 of the cap, so the next thinning comes a quarter of the cap
 * of samples later, not at every put. Each thinning respaces the older samples over the life so
 * far: their resolution falls evenly with the sandbox's age instead of the oldest stretch
 * thinning away.
 */
export function thinSeries(ats: readonly string[], cap: number): string[] {
  if (!Number.isInteger(cap) || cap < 4) throw new RangeError(`cap: at least 4 samples, not ${cap}`);
  if (ats.length <= cap) return [];
  const older = ats.slice(0, ats.length - Math.floor(cap / 4));
  // A time that does not parse cannot be placed on the span: it is dropped first.
  const drop = new Set<string>();
  const placed: string[] = [];
  const t: number[] = [];
  for (const at of older) {
    const ms = Date.parse(at);
    if (Number.isNaN(ms)) drop.add(at);
    else {
      placed.push(at);
      t.push(ms);
    }
  }
  // The kept samples as a linked list; the first of the newest quarter bounds the last older one.
  const n = placed.length;
  const prev = placed.map((_, i) => i - 1);
  const next = placed.map((_, i) => i + 1);
  const bound = Date.parse(ats[older.length] ?? "");
  const timeOf = (i: number) => (i < n ? (t[i] ?? 0) : Number.isNaN(bound) ? (t[n - 1] ?? 0) : bound);
  const merged = (i: number) => timeOf(next[i] ?? n) - timeOf(prev[i] ?? 0);
  // Candidates by (merged gap, index), stale entries skipped: n log n, not n² (a series of 1,440
  // is thinned in a few milliseconds).
  const stamp = new Array<number>(n).fill(0);
  const heap = new MinHeap();
  for (let i = 1; i < n; i++) heap.push(merged(i), i, 0);
  for (let left = n, budget = Math.floor(cap / 2); left > budget; left--) {
    let top = heap.pop();
    while (top && (drop.has(placed[top.i] ?? "") || top.stamp !== stamp[top.i])) top = heap.pop();
    if (!top) break;
    const v = top.i;
    const p = prev[v] ?? 0;
    const q = next[v] ?? n;
    next[p] = q;
    if (q < n) prev[q] = p;
    drop.add(placed[v] ?? "");
    for (const i of [p, q])
      if (i > 0 && i < n) {
        stamp[i] = (stamp[i] ?? 0) + 1;
        heap.push(merged(i), i, stamp[i] ?? 0);
      }
  }
  return older.filter((at) => drop.has(at));
}

/** MinHeap orders thinning candidates by their merged gap, then by age (the older first). */
class MinHeap {
  private readonly items: { gap: number; i: number; stamp: number }[] = [];

  private less(a: number, b: number): boolean {
    const x = this.items[a];
    const y = this.items[b];
    return !!x && !!y && (x.gap < y.gap || (x.gap === y.gap && x.i < y.i));
  }

  private swap(a: number, b: number): void {
    const x = this.items[a];
    const y = this.items[b];
    if (x && y) [this.items[a], this.items[b]] = [y, x];
  }

  push(gap: number, i: number, stamp: number): void {
    this.items.push({ gap, i, stamp });
    for (let k = this.items.length - 1; k > 0 && this.less(k, (k - 1) >> 1); k = (k - 1) >> 1)
      this.swap(k, (k - 1) >> 1);
  }

  pop(): { gap: number; i: number; stamp: number } | undefined {
    const top = this.items[0];
    const last = this.items.pop();
    if (this.items.length && last) {
      this.items[0] = last;
      for (let k = 0; ; ) {
        const l = 2 * k + 1;
        const m = l + 1 < this.items.length && this.less(l + 1, l) ? l + 1 : l;
        if (m >= this.items.length || !this.less(m, k)) break;
        this.swap(k, m);
        k = m;
      }
    }
    return top;
  }
}
