// A download's garbage is socket buffers: a 64 KiB read allocates a buffer outside V8's heap and a
// few hundred bytes on it. V8 starts a young-generation collection (a scavenge: cheap, it frees
// those buffers) when its young generation is full, which the few hundred bytes per read take
// tens of MB to do; long before that, the buffers' external memory passes V8's limit and starts a
// full collection, which marks the whole heap (two or three per 100 MiB; ADR 0036). So the router
// asks for a scavenge itself every COLLECT_EVERY_BYTES it moves, where V8 lets it (the router's
// process runs with --expose-gc): the buffers die young, and the young generation keeps its size
// for ordinary requests (a 1 MB young generation freed the buffers too, but scavenged every few
// dozen requests as well).

/** COLLECT_EVERY_BYTES: the bytes proxied (both ways, every exchange) between two scavenges asked for. */
export const COLLECT_EVERY_BYTES = 16 * 1024 * 1024;

/** Collect asks V8 for a young-generation collection. */
export type Collect = () => void;

/**
 * youngCollection is a Collect over the `gc` function `--expose-gc` gives (globalThis.gc), or
 * undefined without one (a worker thread, or flags that leave it out): nothing is asked then.
 */
export function youngCollection(gc: unknown): Collect | undefined {
  if (typeof gc !== "function") return undefined;
  return () => {
    // The async form answers with a promise: observed, so a rejection can never go unhandled.
    Promise.resolve(gc({ type: "minor", execution: "async" })).catch(() => {});
  };
}

/** YoungCollections counts the bytes the router moved and asks for a scavenge every `every` of them. */
export class YoungCollections {
  private pending = 0;
  private readonly collect: Collect;
  private readonly every: number;

  constructor(collect: Collect, every = COLLECT_EVERY_BYTES) {
    this.collect = collect;
    this.every = every;
  }

  /** moved counts n bytes proxied; a scavenge is asked for each time `every` have passed. */
  moved(n: number): void {
    this.pending += n;
    if (this.pending < this.every) return;
    this.pending %= this.every;
    this.collect();
  }
}
