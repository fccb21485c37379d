// What becomes of a pause that will not complete: its commit failed, ran past the pause's deadline,
// or the pod stopped running the sandbox as recorded. The rule keeps whatever the sandbox still
// runs on: a sandbox that lives on (a container restarted, or the commit never came) and had
// resumed before runs on its earlier snapshot images, so those must outlive the abandoned pause.
import type { V1Pod } from "@kubernetes/client-node";
import { type SandboxSnapshot, type SandboxSnapshotStatus, SNAPSHOT_PHASE } from "../crd/sandbox-snapshot.ts";
import { staleKey } from "./image-names.ts";
import { type SourceState, sourceState } from "./pause-plan.ts";

/** PauseAbandon is the write that undoes a pause that will not complete. */
export type PauseAbandon =
  | { kind: "delete"; why: string; record: false }
  | { kind: "back-to-resumed"; why: string; status: SandboxSnapshotStatus };

/**
 * commitOverdue: the pause's deadline (spec.source.commitUntil) passed before its commit was
 * answered. A snapshot written before the deadline existed has none and is never overdue.
 */
export function commitOverdue(s: SandboxSnapshot, now: Date): boolean {
  const until = Date.parse(String(s.spec.source.commitUntil ?? ""));
  return Number.isFinite(until) && until <= now.getTime();
}

/**
 * committedLate: the agent's commit came after the pause's deadline (status.committedAt past
 * spec.source.commitUntil). Such a pause is abandoned, not completed: its caller was told so, or
 * could be at any moment, and a pause must never complete after that answer.
 */
export function committedLate(s: SandboxSnapshot): boolean {
  const until = Date.parse(String(s.spec.source.commitUntil ?? ""));
  const at = Date.parse(String(s.status?.committedAt ?? ""));
  return Number.isFinite(until) && Number.isFinite(at) && at > until;
}

/**
 * abandonPause undoes a pause given its recorded pod: a sandbox that ended there, or one never
 * resumed (it had no snapshot before this pause, and runs on its pool's images), loses the
 * snapshot; one that resumed before and still lives goes back to Resumed with the images its pod
 * runs (resumedAgainStatus), so the agent deletes only this pause's images.
 */
export function abandonPause(s: SandboxSnapshot, pod: V1Pod | undefined, why: string): PauseAbandon {
  const state: SourceState = sourceState(pod, s.spec.sandboxId, s.spec.source);
  if (state === "ended") return { kind: "delete", why: "the sandbox ended while pausing", record: false };
  if ((s.status?.resumes ?? 0) === 0 || !pod) return { kind: "delete", why, record: false };
  return { kind: "back-to-resumed", why, status: resumedAgainStatus(s, pod) };
}

/**
 * resumedAgainStatus is a snapshot's status back at Resumed after an abandoned pause: images are
 * those the live pod's containers run (found among the current and the stale images: a commit may
 * have moved them to staleImages already), and every other image is stale (deleted by the agent).
 */
export function resumedAgainStatus(s: SandboxSnapshot, pod: V1Pod): SandboxSnapshotStatus {
  const running = new Map((pod.spec?.containers ?? []).map((c) => [c.name, c.image ?? ""]));
  const images: Record<string, string> = {};
  const stale: Record<string, string> = {};
  const sort = (name: string, key: string, image: string) => {
    if (running.get(name) === image) images[name] = image;
    else stale[key] = image;
  };
  for (const [key, image] of Object.entries(s.status?.staleImages ?? {}))
    sort(key.split(":")[0] ?? key, key, image);
  for (const [name, image] of Object.entries(s.status?.images ?? {}))
    sort(name, staleKey(name, image), image);
  const { staleImages: _, images: __, ...kept } = s.status ?? {};
  return {
    ...kept,
    phase: SNAPSHOT_PHASE.RESUMED,
    images,
    ...(Object.keys(stale).length > 0 ? { staleImages: stale } : {}),
  };
}
