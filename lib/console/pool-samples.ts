// The console's memory of each pool's figures over the last hour: a fixed ring of points per pool.

/** PoolSample is one pool's figures at one moment, as its gauges say them. */
export interface PoolSample {
  idle: number;
  running: number;
  desired: number;
}

/** PoolPoint is a sample with its time (ms since the epoch): the last sample of its slot. */
export interface PoolPoint extends PoolSample {
  at: number;
}

/** PoolSamplesOptions size the rings: the span they cover and the points per pool (one per slot). */
export interface PoolSamplesOptions {
  /** windowMs is the span kept (default an hour). */
  windowMs?: number;
  /** points per pool (default 120: one per 30 s over an hour); more samples per slot keep the last. */
  points?: number;
}

/** Slot is a ring entry: the slot number (time / slotMs) the point belongs to. */
interface Slot extends PoolPoint {
  slot: number;
}

/** POOL_SAMPLE_WINDOW_MS is the span the console charts: an hour. */
export const POOL_SAMPLE_WINDOW_MS = 3_600_000;

/**
 * PoolSamples keeps each pool's samples ("namespace/name") over a window in a fixed ring of
 * slots, so memory is bounded however often samples come: a sample lands in the slot of its
 * time, replacing an older sample of that slot (the slot then says the newest figures of its
 * span) or a point that has left the window. Samples older than a slot's point are ignored (a
 * late sample never overwrites a newer one). A pool with no point left in the window is dropped.
 * Time is always passed in; nothing here reads a clock.
 */
export class PoolSamples {
  readonly windowMs: number;
  readonly points: number;
  private readonly slotMs: number;
  private readonly rings = new Map<string, (Slot | undefined)[]>();

  constructor(options: PoolSamplesOptions = {}) {
    this.windowMs = options.windowMs ?? POOL_SAMPLE_WINDOW_MS;
    this.points = Math.max(1, Math.floor(options.points ?? 120));
    this.slotMs = this.windowMs / this.points;
  }

  /** add records one pool's sample taken at `now`. */
  add(pool: string, sample: PoolSample, now: Date): void {
    const at = now.getTime();
    const slot = Math.floor(at / this.slotMs);
    let ring = this.rings.get(pool);
    if (!ring) {
      ring = new Array<Slot | undefined>(this.points).fill(undefined);
      this.rings.set(pool, ring);
    }
    const i = slot % this.points;
    const held = ring[i];
    if (held && (held.slot > slot || (held.slot === slot && held.at > at))) return;
    ring[i] = { slot, at, idle: sample.idle, running: sample.running, desired: sample.desired };
  }

  /**
   * record adds a whole sampling (every pool the gauges name, by "namespace/name") taken at `now`,
   * then drops the pools with no point left in the window: a pool that vanished from the gauges
   * goes once its last point is older than the window (a reconciler restart that empties the
   * gauges for a moment does not wipe the charts).
   */
  record(samples: ReadonlyMap<string, PoolSample>, now: Date): void {
    for (const [pool, sample] of samples) this.add(pool, sample, now);
    for (const pool of [...this.rings.keys()])
      if (this.window(pool, now).length === 0) this.rings.delete(pool);
  }

  /** window is a pool's points within `spanMs` before `now` (at most the window), oldest first. */
  window(pool: string, now: Date, spanMs = this.windowMs): PoolPoint[] {
    const ring = this.rings.get(pool);
    if (!ring) return [];
    const end = now.getTime();
    const start = end - Math.min(spanMs, this.windowMs);
    return ring
      .filter((p): p is Slot => p !== undefined && p.at > start && p.at <= end)
      .sort((a, b) => a.at - b.at)
      .map(({ at, idle, running, desired }) => ({ at, idle, running, desired }));
  }

  /** pools are the pools that have a ring now. */
  pools(): string[] {
    return [...this.rings.keys()];
  }
}

/** GaugeFamily is a metric as prom-client's getMetricsAsJSON gives it (the parts read here). */
export interface GaugeFamily {
  name: string;
  values: readonly { labels: Readonly<Record<string, string | number | undefined>>; value: number }[];
}

/** SAMPLED are the pool gauges a sample reads, by the sample's field. */
const SAMPLED = {
  idle: "agentbox_sandboxpool_replicas_idle",
  running: "agentbox_sandboxpool_replicas_running",
  desired: "agentbox_sandboxpool_replicas_desired",
} as const;

/**
 * poolSamplesOf reads a sampling out of metrics in prom-client's JSON form: the idle, running and
 * desired pool gauges of every pool they name ("namespace/name"), 0 for a gauge a pool lacks.
 */
export function poolSamplesOf(families: readonly GaugeFamily[]): Map<string, PoolSample> {
  const out = new Map<string, PoolSample>();
  for (const [field, name] of Object.entries(SAMPLED) as [keyof PoolSample, string][])
    for (const family of families.filter((f) => f.name === name))
      for (const { labels, value } of family.values) {
        const pool = `${labels.namespace ?? ""}/${labels.pool ?? ""}`;
        const sample = out.get(pool) ?? { idle: 0, running: 0, desired: 0 };
        sample[field] = value;
        out.set(pool, sample);
      }
  return out;
}
