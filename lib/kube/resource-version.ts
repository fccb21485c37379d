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
