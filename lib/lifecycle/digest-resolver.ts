// Completion of an in-place update is judged by content digest when one is known, because a tag
// can be re-pushed and kubelet reports the digest it actually ran (status.imageID). Resolving a
// tag needs a registry call, which lib/ must not make: callers resolve first (with whatever
// resolver their host has) and pass the resulting map to isUpdateComplete.
import { referenceDigest } from "./image-reference.ts";

/** DigestResolver maps an image reference to its content digest (`sha256:…`), if it can. */
export interface DigestResolver {
  /** resolve returns the digest, or undefined when unknown (completion then compares names). */
  resolve(image: string): Promise<string | undefined>;
}

/**
 * referenceDigestResolver knows only the digests written into references themselves
 * (`repo@sha256:…`); tags resolve to undefined. It needs no network, so it works in every host
 * and is the default when no registry-backed resolver is configured.
 */
export const referenceDigestResolver: DigestResolver = {
  resolve: async (image) => referenceDigest(image),
};

/**
 * resolveDigests runs a resolver over a set of images and returns the map isUpdateComplete
 * takes. A resolver that fails for one image leaves that image out (compared by name instead)
 * rather than failing the whole check.
 */
export async function resolveDigests(
  resolver: DigestResolver,
  images: Iterable<string>,
): Promise<Map<string, string>> {
  const unique = [...new Set(images)];
  const resolved = await Promise.all(
    unique.map(async (image) => {
      try {
        return [image, await resolver.resolve(image)] as const;
      } catch {
        return [image, undefined] as const;
      }
    }),
  );
  const digests = new Map<string, string>();
  for (const [image, digest] of resolved) if (digest) digests.set(image, digest);
  return digests;
}
