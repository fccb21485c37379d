import type { V1Pod } from "@kubernetes/client-node";
import { targetImagesOf } from "../lib/lifecycle/completion.ts";
import { resolveDigests } from "../lib/lifecycle/digest-resolver.ts";
import { readInplaceState } from "../lib/lifecycle/inplace-state.ts";
import type { HostDeps } from "./host-deps.ts";

/** targetDigests resolves the digests of every image the pods' in-flight updates target. */
export async function targetDigests(
  deps: HostDeps,
  pods: readonly V1Pod[],
): Promise<ReadonlyMap<string, string>> {
  const images = new Set<string>();
  for (const pod of pods) {
    const { state } = readInplaceState(pod);
    if (state) for (const image of Object.values(targetImagesOf(pod, state))) images.add(image);
  }
  return resolveDigests(deps.digests, [...images]);
}
