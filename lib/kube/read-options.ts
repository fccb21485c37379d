// How fresh a read must be decides where the apiserver serves it from: its watch cache (fast, a
// few milliseconds behind at most) or a quorum read of etcd. These options say which, and render
// the query parameters that ask for it.

/**
 * Cached reads are answered from the apiserver's watch cache instead of a quorum read of etcd.
 * The answer may be a few milliseconds old, so only reads whose staleness a precondition catches
 * (or that tolerate it) use it: the claim path's candidate list (a stale pod fails the claim's
 * resourceVersion test), its pool and template reads, and its API key lookup.
 */
export interface ReadOptions {
  cached?: boolean;
  /**
   * notOlderThan (gets only) reads from the watch cache a version at least this new: as fresh as
   * a quorum read for a write one has seen reported, without reading etcd. Wins over cached.
   */
  notOlderThan?: string;
}

/**
 * getFreshness makes a get cached: resourceVersion=0 means "any version"; a version means "not older than
 * it" (the watch cache waits until it has that version); both are served from the watch cache.
 */
export const getFreshness = (opts: ReadOptions | undefined) =>
  opts?.notOlderThan ? { resourceVersion: opts.notOlderThan } : opts?.cached ? { resourceVersion: "0" } : {};

/**
 * listFreshness makes a list cached. Not resourceVersion=0: for that the apiserver ignores `limit` and
 * returns every match (a claim's "8 idle pods of a shard" came back as all 63 of a 1,000-pod
 * pool, 263 KB, 6.8 ms against 1.5 ms). "Not older than revision 1" is any version too, served
 * from the same cache, and it keeps `limit` (docs/benchmarks.md, candidate lists). That is
 * kube-apiserver 1.36 as built here; an older one may answer such a list from etcd, which is
 * still correct, only slower.
 */
export const listFreshness = (opts: ReadOptions | undefined) =>
  opts?.cached ? { resourceVersion: "1", resourceVersionMatch: "NotOlderThan" } : {};
