// Claims and releases both swap container images in place. Only containers whose image really
// changes are part of the update: kubelet replaces exactly those, so exactly those must show a
// new container before the update counts as complete.
import type { V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../api/annotations.ts";

type LastContainerStatuses = NonNullable<InplaceUpdateState["lastContainerStatuses"]>;

/** ImageSwap is the planned swap: the images that change and the containers' ids before it. */
export type ImageSwap =
  | { ok: true; changed: Record<string, string>; last: LastContainerStatuses; targetImage?: string }
  | { ok: false; reason: string };

/**
 * planImageSwap checks a container → image map against the pod (at least one entry, no empty
 * image, every container exists) and returns the containers whose spec image differs, with
 * their current imageID/containerID (the completion check's proof of replacement) and, for a
 * single-container swap, the legacy `targetImage` agentbox also writes.
 */
export function planImageSwap(pod: V1Pod, images: Readonly<Record<string, string>>): ImageSwap {
  const entries = Object.entries(images);
  if (entries.length === 0) return { ok: false, reason: "target image is required" };
  const containers = pod.spec?.containers ?? [];
  const statuses = pod.status?.containerStatuses ?? [];
  const changed: Record<string, string> = {};
  const last: LastContainerStatuses = {};
  for (const [name, image] of entries) {
    if (!image) return { ok: false, reason: `container ${JSON.stringify(name)}: target image is required` };
    const container = containers.find((c) => c.name === name);
    if (!container) return { ok: false, reason: `container ${JSON.stringify(name)} not found in pod` };
    if (container.image === image) continue;
    changed[name] = image;
    const status = statuses.find((s) => s.name === name);
    last[name] = {
      ...(status?.imageID ? { imageID: status.imageID } : {}),
      ...(status?.containerID ? { containerID: status.containerID } : {}),
    };
  }
  const targets = Object.values(changed);
  return { ok: true, changed, last, ...(targets.length === 1 ? { targetImage: targets[0] } : {}) };
}
