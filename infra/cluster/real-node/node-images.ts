import { buildImages } from "../../images/build-images.ts";
import { pushImages } from "../../images/push.ts";
import type { PublishImages } from "./start-real-node.ts";

/**
 * nodeImages is the real node's image source: the images built here (infra/images, cached after
 * the first build) pushed into the cluster's registry, so pods pull them by tag and the kubelet
 * reports their real digests.
 */
export function nodeImages(log: (line: string) => void): { publishImages: PublishImages } {
  return {
    publishImages: async (registryHostPort) => {
      const built = await buildImages(log);
      await pushImages(built.layoutDir, built.images, registryHostPort, log);
    },
  };
}

/** realNodeSupported says whether this process can run a real node (root: namespaces, mounts, cgroups). */
export function realNodeSupported(): boolean {
  return process.platform === "linux" && process.getuid?.() === 0;
}
