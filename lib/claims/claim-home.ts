// Hosts sharing a pool each keep a feed of its idle pods (functions/cache/idle-feed.ts) that lags
// the others' claims by a watch event. Picked at random, a host's next pod is as likely as any to
// be one another host claimed a moment ago, and that claim patch loses. Each host therefore
// prefers the idle pods nearest its own home on a ring of pod names: while pods are plentiful the
// hosts draw from different parts of the pool, each spreading out from its home, and they meet
// (and may race) only where their regions touch and when the pool runs dry.

/** RING is the size of the ring points live on (2^32). */
const RING = 2 ** 32;

/**
 * ringPoint maps a string (a pod name, a host's instance id) to a point on the ring: FNV-1a, 32
 * bits, then MurmurHash3's finaliser, so names that differ in their last character ("host-1",
 * "host-2") land far apart.
 */
export function ringPoint(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * homeDistance is how far a pod's name lies from a host's home point (ringPoint of its instance
 * id), either way round the ring: the host claims the nearest first.
 */
export function homeDistance(name: string, home: number): number {
  const d = (ringPoint(name) - home + RING) % RING;
  return Math.min(d, RING - d);
}
