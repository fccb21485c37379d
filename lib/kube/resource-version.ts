// Ordering of resourceVersions (Kubernetes 1.35+, KEP-5504: comparable resource versions).

/**
 * resourceVersionOf reads a resourceVersion as the number it is, or undefined when it is not one
 * (not a positive integer without leading zeros): such a version may only be compared for equality.
 * Since Kubernetes 1.35 (KEP-5504, GA) the versions of objects of one resource are such integers
 * and may be ordered; a shared watch uses that to tell which of two versions of a pod is newer.
 */
export function resourceVersionOf(version: string | undefined): bigint | undefined {
  if (!version || !/^[1-9][0-9]*$/.test(version)) return undefined;
  return BigInt(version);
}

/**
 * newestVersion is the later of two versions, or undefined when either is missing or the two
 * cannot be ordered (resourceVersionOf): a caller that needs a read at least that new then reads
 * afresh, which is never wrong, only dearer.
 */
export function newestVersion(a: string | undefined, b: string | undefined): string | undefined {
  const x = resourceVersionOf(a);
  const y = resourceVersionOf(b);
  if (x === undefined || y === undefined) return undefined;
  return x >= y ? a : b;
}

/**
 * reachedVersion says whether a stream now at `current` has delivered everything up to `wanted`:
 * a watch's events (bookmarks too) come in version order, so once its last one is at least
 * `wanted` it has passed the write that reported `wanted`. False when either cannot be ordered.
 */
export function reachedVersion(current: string | undefined, wanted: string): boolean {
  const x = resourceVersionOf(current);
  const y = resourceVersionOf(wanted);
  return x !== undefined && y !== undefined && x >= y;
}
