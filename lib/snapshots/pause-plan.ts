// What a pause records of a running sandbox: everything is read from its pod (the authority for a
// running sandbox), so the snapshot can bring the sandbox back on another pod of the same pool
// with the same id, owner, metadata, timeouts, network marks and env vars (ADR 0045).
import type { V1Pod } from "@kubernetes/client-node";
import {
  EGRESS_LABEL,
  END_AT_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  NETWORK_ANNOTATION,
  ON_TIMEOUT_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_POOL_LABEL,
  SEALED_ENV_VARS_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STARTUP_TIMEOUT_ANNOTATION,
  TEAM_LABEL,
  TRAFFIC_ANNOTATION,
  USER_LABEL,
} from "../crd/keys.ts";
import type { SnapshotClaim, SnapshotContainer, SnapshotSource } from "../crd/sandbox-snapshot.ts";
import { isTerminating } from "../kube/action.ts";
import { managedKeys } from "../lifecycle/lifecycle-keys.ts";
import { sandboxPhaseOf } from "../lifecycle/phase-label.ts";
import { hasPendingHooks } from "../lifecycle/post-start-hooks.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** PausePlan is a running sandbox's pause: what to commit and what a resume claims, or why not. */
export type PausePlan =
  | {
      ok: true;
      sandboxId: string;
      pool: string;
      source: SnapshotSource;
      claim: SnapshotClaim;
      retainUntil: string;
    }
  | { ok: false; reason: "not-running"; message: string };

/**
 * COMMIT_WAIT_MS is how long a pause waits for its node's agent to commit unless its caller says
 * otherwise (the E2B surface waits less, inside the SDK's request timeout).
 */
export const COMMIT_WAIT_MS = 120_000;

/** imageOf is the image a container runs: the kubelet's digest reference when it has one. */
function imageOf(spec: string, imageID: string | undefined): string {
  const digest = imageID?.replace(/^docker-pullable:\/\//, "");
  return digest && /@sha256:[0-9a-f]{64}$/.test(digest) ? digest : spec;
}

/** pickKeys copies the caller's keys a managed-*-keys annotation lists (managedKeys) that are set. */
function pickKeys(pod: V1Pod, values: Record<string, string>, annotation: string): Record<string, string> {
  return Object.fromEntries(
    managedKeys(pod, annotation)
      .filter((k) => values[k] !== undefined)
      .map((k) => [k, values[k] as string]),
  );
}

/** present keeps the listed keys that are set. */
function present(
  values: Record<string, string>,
  keys: readonly string[],
): Record<string, string> | undefined {
  const out = Object.fromEntries(
    keys.filter((k) => values[k] !== undefined).map((k) => [k, values[k] as string]),
  );
  return Object.keys(out).length > 0 ? out : undefined;
}

/** positive reads a whole number of seconds (> 0) from an annotation. */
function positive(raw: string | undefined): number | undefined {
  const n = Math.floor(Number(raw));
  return raw !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** metadataOf reads the sandbox metadata JSON (string values only). */
function metadataOf(raw: string | undefined): Record<string, string> | undefined {
  if (!raw) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
    const out = Object.fromEntries(
      Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
    return Object.keys(out).length > 0 ? out : undefined;
  } catch {
    return undefined;
  }
}

/**
 * pausePlan reads a sandbox's pause from its pod. Only a Running sandbox whose envd got its /init
 * (no pending hooks) and whose every container runs (with a container id) can pause: the commit
 * is of exactly those container instances, and a restart in between makes the agent refuse it.
 * The lifetime left (end-at − now, whole seconds rounded up; when none is left, as at an
 * auto-pause, the lifetime it was given) is what a resume without a timeout gets;
 * retentionSeconds is how long the snapshot is kept unresumed; commitWaitMs how long the pause
 * waits for its commit (spec.source.commitUntil: after that it is abandoned, not completed late).
 */
export function pausePlan(
  pod: V1Pod,
  now: Date,
  retentionSeconds: number,
  commitWaitMs: number = COMMIT_WAIT_MS,
): PausePlan {
  const labels = pod.metadata?.labels ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  const sandboxId = labels[SANDBOX_ID_LABEL] ?? "";
  const notRunning = (message: string): PausePlan => ({ ok: false, reason: "not-running", message });
  const phase = sandboxPhaseOf(pod);
  if (sandboxId && isTerminating(pod))
    return notRunning(`sandbox ${sandboxId} is ending (its pod is being deleted)`);
  if (!sandboxId || phase !== SANDBOX_PHASE.RUNNING)
    return notRunning(`sandbox ${sandboxId || "?"} is ${phase?.toLowerCase() ?? "not claimed"}, not running`);
  if (hasPendingHooks(pod))
    return notRunning(`sandbox ${sandboxId} is still starting (envd not initialised yet)`);
  const node = pod.spec?.nodeName;
  if (!node) return notRunning(`sandbox ${sandboxId}'s pod is not on a node`);
  const containers: SnapshotContainer[] = [];
  for (const c of pod.spec?.containers ?? []) {
    const status = pod.status?.containerStatuses?.find((s) => s.name === c.name);
    if (!status?.state?.running || !status.containerID)
      return notRunning(`sandbox ${sandboxId}'s container ${c.name} is not running`);
    containers.push({
      name: c.name,
      containerID: status.containerID,
      image: imageOf(c.image ?? "", status.imageID),
    });
  }
  if (containers.length === 0) return notRunning(`sandbox ${sandboxId}'s pod has no containers`);
  const endAt = parseTime(annotations[END_AT_ANNOTATION]);
  // The lifetime left; none left (an auto-pause at the end of it): the lifetime it was given, from
  // its start to its end (a running sandbox keeps no lifetime annotation, complete-intent.ts).
  const remaining = endAt ? Math.ceil((endAt.getTime() - now.getTime()) / 1000) : undefined;
  const startedAt = parseTime(annotations[STARTED_AT_ANNOTATION]);
  const given = endAt && startedAt ? Math.round((endAt.getTime() - startedAt.getTime()) / 1000) : undefined;
  const left = remaining !== undefined && remaining > 0 ? remaining : given && given > 0 ? given : undefined;
  const callerLabels = pickKeys(pod, labels, MANAGED_LABEL_KEYS_ANNOTATION);
  const callerAnnotations = pickKeys(pod, annotations, MANAGED_ANNOTATION_KEYS_ANNOTATION);
  const markLabels = present(labels, [EGRESS_LABEL]);
  const markAnnotations = present(annotations, [
    NETWORK_ANNOTATION,
    TRAFFIC_ANNOTATION,
    ON_TIMEOUT_ANNOTATION,
  ]);
  const metadata = metadataOf(annotations[SANDBOX_METADATA_ANNOTATION]);
  const idle = positive(annotations[IDLE_TIMEOUT_ANNOTATION]);
  const startup = positive(annotations[STARTUP_TIMEOUT_ANNOTATION]);
  const sealed = annotations[SEALED_ENV_VARS_ANNOTATION];
  const claim: SnapshotClaim = {
    containerImages: Object.fromEntries((pod.spec?.containers ?? []).map((c) => [c.name, c.image ?? ""])),
    team: labels[TEAM_LABEL] ?? "",
    ...(labels[USER_LABEL] ? { user: labels[USER_LABEL] } : {}),
    ...(Object.keys(callerLabels).length > 0 ? { labels: callerLabels } : {}),
    ...(Object.keys(callerAnnotations).length > 0 ? { annotations: callerAnnotations } : {}),
    ...(markLabels ? { markLabels } : {}),
    ...(markAnnotations ? { markAnnotations } : {}),
    ...(metadata ? { metadata } : {}),
    ...(idle ? { idleTimeoutSeconds: idle } : {}),
    ...(startup ? { startupTimeoutSeconds: startup } : {}),
    ...(left ? { lifetimeSeconds: left } : {}),
    ...(sealed ? { sealedEnvVars: sealed } : {}),
  };
  return {
    ok: true,
    sandboxId,
    pool: labels[SANDBOX_POOL_LABEL] ?? "",
    source: {
      node,
      pod: pod.metadata?.name ?? "",
      podUID: pod.metadata?.uid ?? "",
      ...(pod.status?.podIP ? { podIP: pod.status.podIP } : {}),
      containers,
      commitUntil: rfc3339(new Date(now.getTime() + commitWaitMs)),
    },
    claim,
    retainUntil: rfc3339(new Date(now.getTime() + retentionSeconds * 1000)),
  };
}

/**
 * runsSource says whether a pod still runs the sandbox exactly as a pause recorded it: the same
 * pod (uid), still this sandbox's and Running, every recorded container the same instance. A kill,
 * an expiry or a restart since makes it false, and the pause must not release anything.
 */
export function runsSource(pod: V1Pod | undefined, sandboxId: string, source: SnapshotSource): boolean {
  return sourceState(pod, sandboxId, source) === "runs";
}

/**
 * SourceState is what became of the pod a pause recorded: it `runs` the sandbox as recorded; it
 * still holds the sandbox but a container `restarted` (a new instance, or not running right now);
 * or the sandbox `ended` there (the pod released, reused, deleted or gone).
 */
export type SourceState = "runs" | "restarted" | "ended";

/** sourceState tells runs, restarted and ended apart (SourceState) for the pod a pause recorded. */
export function sourceState(pod: V1Pod | undefined, sandboxId: string, source: SnapshotSource): SourceState {
  if (!pod || pod.metadata?.uid !== source.podUID || isTerminating(pod)) return "ended";
  if (pod.metadata?.labels?.[SANDBOX_ID_LABEL] !== sandboxId) return "ended";
  const phase = sandboxPhaseOf(pod);
  if (phase !== SANDBOX_PHASE.RUNNING && phase !== SANDBOX_PHASE.STARTING) return "ended";
  const same = source.containers.every(
    (c) => pod.status?.containerStatuses?.find((s) => s.name === c.name)?.containerID === c.containerID,
  );
  return phase === SANDBOX_PHASE.RUNNING && same ? "runs" : "restarted";
}
