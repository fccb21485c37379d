// Claims and releases both swap container images in place. Kubelet restarts exactly the
// containers whose spec image string changes, so exactly those must show a new container before
// the update counts as complete. A container that must start afresh on the image it already runs
// (it served a sandbox) gets another spelling of that image (restartReference).
import type { V1Pod } from "@kubernetes/client-node";
import type { InplaceUpdateState } from "../crd/annotations.ts";
import { restartReference } from "./image-reference.ts";

type LastContainerStatuses = NonNullable<InplaceUpdateState["lastContainerStatuses"]>;

/**
 * ImageSwap is the planned swap: the images that change, the containers' ids before it, and the
 * containers that had to be restarted but cannot be in place (their pod must be replaced).
 */
export type ImageSwap =
  | {
      ok: true;
      changed: Record<string, string>;
      last: LastContainerStatuses;
      targetImage?: string;
      unrestartable: string[];
    }
  | { ok: false; reason: string };

/** SwapOptions says which containers start afresh and when a container already runs an image. */
export interface SwapOptions {
  /**
   * restart names containers that must run in a new container even when their image stays (they
   * served a sandbox); one missing from `images` is restarted on its current image.
   */
  restart?: ReadonlySet<string>;
  /** same tells whether a spec image already is the wanted one (default: the same string). */
  same?: (specImage: string, wanted: string) => boolean;
}

/**
 * planImageSwap checks a container → image map against the pod (at least one entry, no empty
 * image, every container exists) and returns the containers whose spec image must change: those
 * whose image differs, and those in `restart` (on restartReference's spelling of their image, or
 * listed as unrestartable when there is none), with their current imageID/containerID (the
 * completion check's proof of replacement) and, for a single-container swap, the legacy
 * `targetImage` agentbox also writes.
 */
export function planImageSwap(
  pod: V1Pod,
  images: Readonly<Record<string, string>>,
  options: SwapOptions = {},
): ImageSwap {
  const entries = Object.entries(images);
  if (entries.length === 0) return { ok: false, reason: "target image is required" };
  const containers = pod.spec?.containers ?? [];
  const statuses = pod.status?.containerStatuses ?? [];
  const restart = options.restart ?? new Set<string>();
  const same = options.same ?? ((a: string, b: string) => a === b);
  const wanted = new Map(entries);
  for (const name of restart) {
    const current = containers.find((c) => c.name === name)?.image;
    if (!wanted.has(name) && current) wanted.set(name, current);
  }
  const changed: Record<string, string> = {};
  const last: LastContainerStatuses = {};
  const unrestartable: string[] = [];
  for (const [name, image] of wanted) {
    if (!image) return { ok: false, reason: `container ${JSON.stringify(name)}: target image is required` };
    const container = containers.find((c) => c.name === name);
    if (!container) return { ok: false, reason: `container ${JSON.stringify(name)} not found in pod` };
    const status = statuses.find((s) => s.name === name);
    const current = container.image ?? "";
    if (same(current, image) && !restart.has(name)) continue;
    // A different string restarts the container; the same one needs another spelling.
    const target = current !== image ? image : restartReference(current, status?.imageID);
    if (target === undefined) {
      unrestartable.push(name);
      continue;
    }
    changed[name] = target;
    last[name] = {
      ...(status?.imageID ? { imageID: status.imageID } : {}),
      ...(status?.containerID ? { containerID: status.containerID } : {}),
    };
  }
  const targets = Object.values(changed);
  return {
    ok: true,
    changed,
    last,
    unrestartable,
    ...(targets.length === 1 ? { targetImage: targets[0] } : {}),
  };
}
