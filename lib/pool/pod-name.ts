// Deterministic Pod names: the name is the only thing the API server makes unique for free, so
// the pool uses it as its lock against concurrent, repeated or late runs of the same step.

/** DNS_LABEL_MAX is the longest Pod name kept: the hostname a Pod gets from its name is a DNS label. */
const DNS_LABEL_MAX = 63;
/** HASH_LENGTH is the length of the pool-name hash kept when the pool part is truncated. */
const HASH_LENGTH = 8;

/** fnv1a32 is a small, stable, dependency-free string hash (FNV-1a, 32 bit) as 8 hex digits. */
function fnv1a32(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(HASH_LENGTH, "0");
}

/**
 * podName is the name of the Pod in slot `slot` of pool `poolName`: `<pool>-<slot>`, e.g.
 * `web-0`. When that would exceed 63 characters, the pool part is cut and followed by a hash of
 * the whole pool name (`<pool prefix>-<hash8>-<slot>`), so two long pool names sharing a prefix
 * still get distinct names, and the same (pool, slot) always yields the same name.
 *
 * Why slots: creation only ever uses the lowest free slot indices below spec.replicas. Two runs
 * that decide, concurrently or from a stale read, to add "the next Pod" pick the same name and
 * one of them gets AlreadyExists, so the Pods the pool creates can never outnumber
 * spec.replicas, without locks, leader election or expectations caches. Pods not named like a
 * slot (adopted from agentbox, which used generateName) still count toward replicas; they just
 * never occupy a slot, and scale-down removes them like any other idle Pod.
 *
 * (A pool literally named like another long pool's `<prefix>-<hash8>` would collide on names; the
 * hash makes that a deliberate act, not an accident.)
 */
export function podName(poolName: string, slot: number): string {
  if (!Number.isSafeInteger(slot) || slot < 0) {
    throw new RangeError(`podName: slot must be a non-negative integer, got ${slot}`);
  }
  const suffix = `-${slot}`;
  if (poolName.length + suffix.length <= DNS_LABEL_MAX) return `${poolName}${suffix}`;
  const room = DNS_LABEL_MAX - suffix.length - 1 - HASH_LENGTH;
  // A Pod name must not end a segment with '-' or '.', nor join '.' and '-'.
  const prefix = poolName.slice(0, room).replace(/[-.]+$/, "");
  return `${prefix}-${fnv1a32(poolName)}${suffix}`;
}

/**
 * slotOf is the slot a Pod occupies in its pool, or undefined when its name is not a slot name
 * of that pool (adopted Pods with generated names, or another naming scheme). It is the exact
 * inverse of podName: a name is a slot name only if podName would produce it.
 */
export function slotOf(poolName: string, name: string): number | undefined {
  const match = /-(0|[1-9][0-9]{0,14})$/.exec(name);
  if (!match?.[1]) return undefined;
  const slot = Number(match[1]);
  return podName(poolName, slot) === name ? slot : undefined;
}
