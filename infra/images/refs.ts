/**
 * refs.ts names the images built here as pods and pools refer to them. Containerd on the real node
 * maps the registry name IMAGE_REGISTRY to the local registry, so the same reference works
 * wherever the images were pushed.
 */

/** IMAGE_REGISTRY is the registry name every image reference uses. */
export const IMAGE_REGISTRY = "registry.agentbox.test";
/** IMAGE_REPOSITORY_PREFIX is the repository path every image lives under. */
export const IMAGE_REPOSITORY_PREFIX = "agentbox";

/** imageRef is an image's reference: `registry.agentbox.test/agentbox/<name>:<tag>` (tag "1"). */
export function imageRef(name: string, tag = "1"): string {
  return `${IMAGE_REGISTRY}/${IMAGE_REPOSITORY_PREFIX}/${name}:${tag}`;
}
