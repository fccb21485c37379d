// What a node's snapshot agent does for one SandboxSnapshot (ADR 0045), decided from the object
// alone: commit its source, delete the images an earlier pause left, or delete every image of a
// deleted snapshot and let it go. functions/snapshots/snapshot-agent.ts reads, acts and writes.
import {
  type SandboxSnapshot,
  type SandboxSnapshotStatus,
  SNAPSHOT_FINALIZER,
  SNAPSHOT_PHASE,
} from "../crd/sandbox-snapshot.ts";
import { parseImageReference, SNAPSHOT_REPOSITORY, snapshotRepository, staleKey } from "./image-names.ts";
import { owesHistory } from "./lifecycle-events.ts";

/**
 * SnapshotWork is what one snapshot needs from its agent now:
 * - `commit`: commit spec.source as the image of `generation` (metadata.generation);
 * - `remove-stale`: delete these images of an earlier pause (by staleImages key), then forget them
 *   and the `foreign` keys (entries naming no image of this sandbox: forgotten, never deleted);
 * - `finalize`: delete every image (current and stale) of this sandbox (isOwnImage) and every
 *   tagged manifest of the snapshot's repositories (snapshotRepositories), then remove the finalizer;
 * - `none`: nothing, until the object changes.
 */
export type SnapshotWork =
  | { kind: "commit"; generation: number }
  | { kind: "remove-stale"; images: Record<string, string>; foreign: string[] }
  | { kind: "finalize"; images: string[] }
  | { kind: "none" };

/** AFTER_PAUSE are the phases in which the sandbox's state is its latest images, not the earlier ones. */
const AFTER_PAUSE: ReadonlySet<string> = new Set([
  SNAPSHOT_PHASE.PAUSED,
  SNAPSHOT_PHASE.RESUMING,
  SNAPSHOT_PHASE.RESUMED,
]);

/** generationOf is the object's metadata.generation (1 for an object the apiserver has not numbered). */
const generationOf = (s: SandboxSnapshot): number => s.metadata?.generation ?? 1;

/**
 * needsCommit: a pause asked for a commit (phase absent or Committing) of a generation the agent
 * has not answered yet. A generation already answered (Committed or Failed) is never committed
 * again: a host that wants another commit changes spec.source, which bumps the generation.
 */
export function needsCommit(s: SandboxSnapshot): boolean {
  const phase = s.status?.phase;
  if (phase !== undefined && phase !== SNAPSHOT_PHASE.COMMITTING) return false;
  return s.status?.observedGeneration !== generationOf(s);
}

/**
 * snapshotWork decides what a snapshot needs. A deleted one (deletionTimestamp) only has its images
 * deleted, and only while it still carries the agent's finalizer and owes the history nothing
 * (owesHistory: the hosts write what it holds the facts of first, then say so in its status); a
 * commit comes before deleting stale images (a commit adds to them).
 */
export function snapshotWork(s: SandboxSnapshot): SnapshotWork {
  if (s.metadata?.deletionTimestamp) {
    if (!s.metadata.finalizers?.includes(SNAPSHOT_FINALIZER) || owesHistory(s)) return { kind: "none" };
    const images = [...Object.values(s.status?.images ?? {}), ...Object.values(s.status?.staleImages ?? {})];
    return { kind: "finalize", images: [...new Set(images.filter((i) => isOwnImage(s, i)))] };
  }
  if (needsCommit(s)) return { kind: "commit", generation: generationOf(s) };
  const stale = Object.entries(s.status?.staleImages ?? {});
  if (stale.length > 0 && AFTER_PAUSE.has(s.status?.phase ?? ""))
    return {
      kind: "remove-stale",
      images: Object.fromEntries(stale.filter(([, image]) => isOwnImage(s, image))),
      foreign: stale.filter(([, image]) => !isOwnImage(s, image)).map(([key]) => key),
    };
  return { kind: "none" };
}

/**
 * snapshotRepositories are the repositories a snapshot's images may be in, each
 * `<registry>/agentbox-snapshots/<namespace>/<sandboxId>/<container>`: one per container the
 * source names or the status records (images, and staleImages keyed `<container>:<tag>`), under
 * `registry` (where this agent pushes), and the repository of every recorded image that is one
 * of this sandbox's (pushed under another registry name, if that changed; a recorded image of
 * any other repository is never a reason to empty it). Finalization empties each of them, so a
 * manifest pushed but never recorded (an agent that died between its push and its status write)
 * goes with the rest. A name that cannot be a repository component was never pushed to.
 */
export function snapshotRepositories(s: SandboxSnapshot, registry: string): string[] {
  const namespace = s.metadata?.namespace ?? "";
  const containers = new Set<string>([
    ...s.spec.source.containers.map((c) => c.name),
    ...Object.keys(s.status?.images ?? {}),
    ...Object.keys(s.status?.staleImages ?? {}).map((key) => key.split(":")[0] ?? key),
  ]);
  const repositories = new Set<string>();
  for (const container of containers) {
    try {
      repositories.add(snapshotRepository(registry, namespace, s.spec.sandboxId, container));
    } catch {
      // Not a valid repository: nothing was ever pushed there.
    }
  }
  const recorded = [...Object.values(s.status?.images ?? {}), ...Object.values(s.status?.staleImages ?? {})];
  for (const image of recorded) {
    const ref = ownReference(s, image);
    if (ref) repositories.add(`${ref.registry}/${ref.repository}`);
  }
  return [...repositories].sort();
}

/**
 * isOwnImage: `image` is in one of this sandbox's repositories
 * (`<any registry>/agentbox-snapshots/<namespace>/<sandboxId>/<container>`), so this snapshot's
 * agent may delete it. A status naming any other image (another sandbox's, a pool's base image:
 * a host's bug or a forged write) never makes the agent delete it.
 */
export function isOwnImage(s: SandboxSnapshot, image: string): boolean {
  return ownReference(s, image) !== undefined;
}

/** ownReference is `image` parsed, when it is in one of this sandbox's repositories. */
function ownReference(s: SandboxSnapshot, image: string): ReturnType<typeof parseImageReference> | undefined {
  const own = `${SNAPSHOT_REPOSITORY}/${s.metadata?.namespace ?? ""}/${s.spec.sandboxId}/`;
  try {
    const ref = parseImageReference(image);
    const rest = ref.repository.slice(own.length);
    return ref.repository.startsWith(own) && rest !== "" && !rest.includes("/") ? ref : undefined;
  } catch {
    return undefined; // An unreadable reference names no repository.
  }
}

/**
 * mustEmptyRepositories: a deleted snapshot keeps its finalizer until its repositories are emptied
 * (snapshotRepositories), unless its last commit failed and it records no image at all. That
 * commit's agent removed what it had pushed, a failure is most often the registry being down, and
 * an outage must not hold the object (a sandbox that kept running cannot pause again while its
 * snapshot is being deleted) until the registry is back: such a sweep is tried once, briefly.
 * Every other state may hide a manifest pushed and never recorded (an agent that died between
 * its push and its status write), so its sweep must succeed.
 */
export function mustEmptyRepositories(s: SandboxSnapshot): boolean {
  const recorded =
    Object.keys(s.status?.images ?? {}).length + Object.keys(s.status?.staleImages ?? {}).length;
  return s.status?.phase !== SNAPSHOT_PHASE.FAILED || recorded > 0;
}

/**
 * commitBudgetMs is how long the next container's commit may take at `now`: `limitMs`, cut to what
 * is left of the pause's deadline (spec.source.commitUntil). A commit past that deadline is
 * abandoned by the hosts whatever it answers, so the agent stops there rather than keep the
 * registry, the node's disk and the snapshot's next pause (serialised behind it) busy for nothing;
 * zero or less: do not start. A snapshot without a deadline gets `limitMs`.
 */
export function commitBudgetMs(s: SandboxSnapshot, now: Date, limitMs: number): number {
  const until = Date.parse(String(s.spec.source.commitUntil ?? ""));
  return Number.isFinite(until) ? Math.min(limitMs, until - now.getTime()) : limitMs;
}

/**
 * commitFailure reads a container's failed commit: `overdue` when the pause's deadline cut it short
 * (never begun, or aborted while its budget was below `limitMs`, so the deadline was the bound),
 * which the hosts abandon whatever the agent answers; otherwise why it failed: the limit, or the
 * committer's error.
 */
export function commitFailure(f: {
  budgetMs: number;
  limitMs: number;
  aborted: boolean;
  error: string;
  commitUntil?: string;
}): { overdue: boolean; why: string } {
  if (f.budgetMs <= 0 || (f.aborted && f.budgetMs < f.limitMs))
    return { overdue: true, why: `not done by the pause's deadline (${f.commitUntil})` };
  return { overdue: false, why: f.aborted ? `took longer than ${Math.round(f.limitMs / 1000)} s` : f.error };
}

/**
 * commitStillWanted: a commit of `generation` made from an earlier read may be written onto this
 * later one (a write conflicted: someone else changed the object meanwhile). It may when that
 * generation is still the one asked for, still unanswered, and the snapshot is not being deleted;
 * otherwise the images it pushed belong to nobody.
 */
export function commitStillWanted(latest: SandboxSnapshot, generation: number): boolean {
  return !latest.metadata?.deletionTimestamp && needsCommit(latest) && generationOf(latest) === generation;
}

/**
 * imageCreated is the time a snapshot's images record as their creation: the object's
 * creationTimestamp (the epoch for an object never stored, which the agent never reads). The
 * same for every attempt at every generation, so a commit retried over unchanged files pushes
 * the manifest the attempt before it pushed (the tag annotation keeps generations apart).
 */
export function imageCreated(s: SandboxSnapshot): string {
  return s.metadata?.creationTimestamp ?? "1970-01-01T00:00:00Z";
}

/**
 * unrecorded are the images (by key) whose manifest (repository and digest) `latest` does not
 * record in its images or staleImages: what a dropped commit may delete. Commits are
 * deterministic, so another agent's commit of the same generation may have recorded the very
 * manifest this one pushed; that one stays.
 */
export function unrecorded(
  latest: SandboxSnapshot | undefined,
  images: Record<string, string>,
): Record<string, string> {
  const manifestOf = (image: string) => {
    try {
      const ref = parseImageReference(image);
      return ref.digest ? `${ref.registry}/${ref.repository}@${ref.digest}` : image;
    } catch {
      return image;
    }
  };
  const kept = new Set(
    [...Object.values(latest?.status?.images ?? {}), ...Object.values(latest?.status?.staleImages ?? {})].map(
      manifestOf,
    ),
  );
  return Object.fromEntries(Object.entries(images).filter(([, image]) => !kept.has(manifestOf(image))));
}

/**
 * CommittedImage is one container's commit: the pushed image (by digest) and its layer's size,
 * and the image its tag named before (`replaced`), when an earlier attempt at this generation
 * pushed other bytes (its files changed since) and was never recorded.
 */
export interface CommittedImage {
  image: string;
  bytes: number;
  replaced?: string;
}

/**
 * leftBehind are the images a commit's outcome leaves to delete, by key: the ones it pushed
 * (`pushed`: when the outcome is not recorded) and the ones it replaced under its tags (always:
 * an earlier attempt's, no longer tagged), less any manifest `latest` records (unrecorded).
 */
export function leftBehind(
  latest: SandboxSnapshot | undefined,
  committed: Record<string, CommittedImage>,
  pushed: boolean,
): Record<string, string> {
  const images: Record<string, string> = {};
  for (const [name, c] of Object.entries(committed)) {
    if (pushed) images[name] = c.image;
    if (c.replaced) images[`${name} (replaced)`] = c.replaced;
  }
  return unrecorded(latest, images);
}

/**
 * committedStatus is the status after a commit of `generation`: Committed with the new images,
 * their total size and when; the images they replace join staleImages (deleted once the sandbox is
 * paused again), unless an image is still one of the new ones. The host's fields are kept.
 */
export function committedStatus(
  s: SandboxSnapshot,
  generation: number,
  committed: Record<string, CommittedImage>,
  now: Date,
): SandboxSnapshotStatus {
  const images = Object.fromEntries(Object.entries(committed).map(([name, c]) => [name, c.image]));
  const current = new Set(Object.values(images));
  const stale: Record<string, string> = {};
  for (const [key, image] of Object.entries(s.status?.staleImages ?? {}))
    if (!current.has(image)) stale[key] = image;
  for (const [name, image] of Object.entries(s.status?.images ?? {}))
    if (!current.has(image)) stale[staleKey(name, image)] = image;
  const { message: _, staleImages: __, ...kept } = s.status ?? {};
  return {
    ...kept,
    phase: SNAPSHOT_PHASE.COMMITTED,
    observedGeneration: generation,
    images,
    bytes: Object.values(committed).reduce((sum, c) => sum + c.bytes, 0),
    committedAt: now.toISOString(),
    ...(Object.keys(stale).length > 0 ? { staleImages: stale } : {}),
  };
}

/**
 * failedStatus is the status after a failed commit of `generation`: Failed with why. The images of
 * an earlier pause stay: the sandbox kept running on them, and the next commit replaces them.
 */
export function failedStatus(s: SandboxSnapshot, generation: number, message: string): SandboxSnapshotStatus {
  return { ...s.status, phase: SNAPSHOT_PHASE.FAILED, observedGeneration: generation, message };
}

/** withoutStale is the status with the stale images that were deleted (by key) forgotten. */
export function withoutStale(s: SandboxSnapshot, removed: readonly string[]): SandboxSnapshotStatus {
  const { staleImages, ...rest } = s.status ?? {};
  const left = Object.fromEntries(
    Object.entries(staleImages ?? {}).filter(([key]) => !removed.includes(key)),
  );
  return Object.keys(left).length > 0 ? { ...rest, staleImages: left } : rest;
}

/** withoutFinalizer is the object with the agent's finalizer removed (its images are deleted). */
export function withoutFinalizer(s: SandboxSnapshot): SandboxSnapshot {
  const finalizers = (s.metadata?.finalizers ?? []).filter((f) => f !== SNAPSHOT_FINALIZER);
  return { ...s, metadata: { ...s.metadata, finalizers } };
}
