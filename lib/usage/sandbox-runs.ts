// Which container runs of a pod are its sandbox's: a pooled pod serves one sandbox after another
// under the same name and uid, so the kubelet's figures of its containers must be told apart by
// when each run began.
import type { V1Pod } from "@kubernetes/client-node";
import { CLAIMED_AT_ANNOTATION } from "../crd/keys.ts";
import { readInplaceState } from "../lifecycle/inplace-state.ts";
import { parseTime } from "../util/time.ts";
import type { ContainerUsage } from "./sample.ts";

/** floorSecond drops the milliseconds: the kubelet's start times are whole seconds (metav1.Time). */
const floorSecond = (ms: number) => Math.floor(ms / 1000) * 1000;

/**
 * sandboxRunsSince says, per container of a claimed pod, from when (ms) a run of it is the
 * sandbox's: from the claim (an in-place swap restarts the container after it; the run before
 * was the idle one, and the one before that the previous tenant's), or, for a container the
 * claim kept as it ran (a claim of the images the pod already ran, in containers that served no
 * one: the state's stableContainerStatuses name it, with its containerID still the current one),
 * from the end of the run before it (the kubelet's startTime of a run is its container's
 * creation, which follows that end; a first run has none before it). Times are whole seconds, as
 * the kubelet reports them. Undefined: the pod carries no claim time (not claimed, or not by us).
 */
export function sandboxRunsSince(pod: V1Pod): Map<string, number> | undefined {
  const claimed = parseTime(pod.metadata?.annotations?.[CLAIMED_AT_ANNOTATION]);
  if (!claimed) return undefined;
  const from = floorSecond(claimed.getTime());
  const stable = readInplaceState(pod).state?.stableContainerStatuses ?? {};
  const statuses = pod.status?.containerStatuses ?? [];
  const since = new Map<string, number>();
  for (const c of pod.spec?.containers ?? []) {
    const status = statuses.find((s) => s.name === c.name);
    const kept = stable[c.name]?.containerID;
    if (kept === undefined || kept !== status?.containerID) {
      since.set(c.name, from);
      continue;
    }
    // The kept run began after the run before it ended (a first run: nothing ran before it).
    const before = parseTime(status.lastState?.terminated?.finishedAt);
    since.set(c.name, Math.min(from, before ? floorSecond(before.getTime()) : 0));
  }
  return since;
}

/**
 * sandboxFigures picks the figures of the sandbox's own runs out of a node's: the pod's (by
 * namespace and name, and uid when the source tells it), of its spec's containers, whose run
 * began at or after sandboxRunsSince says. A figure without a start time cannot be placed, so it
 * is left out: never a previous tenant's run shown as this sandbox's.
 */
export function sandboxFigures(pod: V1Pod, figures: readonly ContainerUsage[]): ContainerUsage[] {
  const since = sandboxRunsSince(pod);
  if (!since) return [];
  const { namespace, name, uid } = pod.metadata ?? {};
  return figures.filter((f) => {
    if (f.namespace !== namespace || f.pod !== name) return false;
    if (f.podUid !== undefined && uid !== undefined && f.podUid !== uid) return false;
    const from = since.get(f.container);
    const started = parseTime(f.startTime);
    return from !== undefined && started !== undefined && started.getTime() >= from;
  });
}
