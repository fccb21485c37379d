// SandboxSnapshot (namespaced, named after its sandbox id): a paused sandbox. While a sandbox is
// paused it holds no pod; this object holds what it needs to come back — the snapshot images
// (its containers' filesystem changes committed on top of the images they ran), the claim to
// make again (owner, metadata, timeouts, network marks, sealed env vars) and its remaining
// lifetime. Hosts write the spec and the pause/resume phases; the node's snapshot agent writes
// the commit's outcome (ADR 0045). Not in the seed's types: agentbox has no pause.
import * as v from "valibot";
import { Conditions, Int32, Int64, kindObject, listObject, StringMap, Time } from "./common.ts";
import { KIND } from "./keys.ts";

/**
 * SNAPSHOT_FINALIZER keeps a SandboxSnapshot until the snapshot agent has deleted its images from
 * the registry (status.images, status.staleImages, and every other tagged manifest of its
 * repositories: one pushed but never recorded too).
 */
export const SNAPSHOT_FINALIZER = "agentbox.navix.sh/snapshot-images";

/** SNAPSHOT_PHASE is a SandboxSnapshot's phase (status.phase). */
export const SNAPSHOT_PHASE = {
  /** COMMITTING: a pause asked the agent on the sandbox's node to commit spec.source. */
  COMMITTING: "Committing",
  /** COMMITTED: the agent pushed the images of spec.source (status.images); the pod still runs. */
  COMMITTED: "Committed",
  /** PAUSED: the images are the sandbox's state and its pod went back to the pool. */
  PAUSED: "Paused",
  /** RESUMING: one resume (status.resume.attempt) is claiming a pod to the snapshot images. */
  RESUMING: "Resuming",
  /** RESUMED: the sandbox runs again (status.resume.pod) on the snapshot images. */
  RESUMED: "Resumed",
  /** FAILED: the commit failed (status.message); the sandbox kept running, nothing was released. */
  FAILED: "Failed",
} as const;
export type SnapshotPhase = (typeof SNAPSHOT_PHASE)[keyof typeof SNAPSHOT_PHASE];

/** SnapshotContainer is one container a pause commits: the exact running instance and its image. */
export const SnapshotContainer = v.object({
  name: v.pipe(v.string(), v.description("Container name; the list key.")),
  containerID: v.pipe(
    v.string(),
    v.description(
      "The runtime's id of the running container (`containerd://...`); a different one is not committed.",
    ),
  ),
  image: v.pipe(
    v.string(),
    v.description("The image the container runs, by digest when the kubelet reported one (imageID)."),
  ),
});
export type SnapshotContainer = v.InferOutput<typeof SnapshotContainer>;

/** SnapshotSource is what one pause commits: a running pod's sandbox containers on one node. */
export const SnapshotSource = v.object({
  node: v.pipe(v.string(), v.description("Node the pod runs on; its snapshot agent commits.")),
  pod: v.pipe(v.string(), v.description("Name of the pod.")),
  podUID: v.pipe(v.string(), v.description("UID of the pod.")),
  podIP: v.optional(
    v.pipe(v.string(), v.description("IP of the pod (the kwok stand-in finds its files by it).")),
  ),
  containers: v.pipe(v.array(SnapshotContainer), v.minLength(1), v.description("The containers to commit.")),
  commitUntil: v.optional(
    v.pipe(
      Time,
      v.description(
        "The pause's deadline: a commit not done by then is abandoned and the sandbox keeps running.",
      ),
    ),
  ),
});
export type SnapshotSource = v.InferOutput<typeof SnapshotSource>;

/** SnapshotClaim is the claim a resume makes again, as the sandbox's first claim made it. */
export const SnapshotClaim = v.object({
  containerImages: v.pipe(StringMap, v.description("Images the sandbox asked for, by container.")),
  team: v.pipe(v.string(), v.description("Owning team.")),
  user: v.optional(v.pipe(v.string(), v.description("Owning user."))),
  labels: v.optional(v.pipe(StringMap, v.description("The caller's own pod labels."))),
  annotations: v.optional(v.pipe(StringMap, v.description("The caller's own pod annotations."))),
  markLabels: v.optional(v.pipe(StringMap, v.description("Control-plane labels of the sandbox (egress)."))),
  markAnnotations: v.optional(
    v.pipe(
      StringMap,
      v.description("Control-plane annotations of the sandbox (network, traffic, on-timeout)."),
    ),
  ),
  metadata: v.optional(v.pipe(StringMap, v.description("The sandbox's metadata."))),
  idleTimeoutSeconds: v.optional(v.pipe(Int64, v.description("Idle timeout."))),
  startupTimeoutSeconds: v.optional(v.pipe(Int64, v.description("Startup timeout."))),
  lifetimeSeconds: v.optional(
    v.pipe(Int64, v.description("Lifetime left at the pause; a resume without a timeout gets this much.")),
  ),
  sealedEnvVars: v.optional(
    v.pipe(
      v.string(),
      v.description("The sandbox's env vars, sealed for its id; a resume hands them to envd."),
    ),
  ),
});
export type SnapshotClaim = v.InferOutput<typeof SnapshotClaim>;

/** SandboxSnapshotSpec is written by hosts: what a pause commits and what a resume claims. */
export const SandboxSnapshotSpec = v.object({
  sandboxId: v.pipe(v.string(), v.description("The sandbox's id (also the object's name).")),
  pool: v.pipe(
    v.string(),
    v.description("The pool the sandbox ran in; a resume claims one of its idle pods."),
  ),
  env: v.optional(v.pipe(v.string(), v.description("The Env the sandbox was created through, if any."))),
  source: v.pipe(SnapshotSource, v.description("What the latest pause commits.")),
  claim: v.pipe(SnapshotClaim, v.description("The claim a resume makes.")),
  retainUntil: v.optional(
    v.pipe(Time, v.description("A paused sandbox not resumed by then is deleted with its images.")),
  ),
});
export type SandboxSnapshotSpec = v.InferOutput<typeof SandboxSnapshotSpec>;

/** SnapshotResume is the resume under way or done. */
export const SnapshotResume = v.object({
  attempt: v.pipe(v.string(), v.description("The resume's id, written on the pod it claims.")),
  until: v.pipe(Time, v.description("After this a Resuming snapshot with no pod goes back to Paused.")),
  pod: v.optional(v.pipe(v.string(), v.description("The pod the sandbox resumed on."))),
});

/**
 * MAX_PENDING_EVENTS bounds status.pendingEvents: past it the oldest are dropped (a history down
 * through more than this many pauses and resumes of one sandbox), so the object stays small.
 */
export const MAX_PENDING_EVENTS = 32;

/** PendingEvent is a pause's or resume's history event kept on the snapshot until written. */
export const PendingEvent = v.object({
  kind: v.pipe(v.picklist(["paused", "resumed"]), v.description("paused or resumed.")),
  n: v.pipe(Int32, v.minValue(1), v.description("The n-th pause, or the n-th resume, of the sandbox.")),
  at: Time,
  podName: v.pipe(v.string(), v.description("The pod the sandbox left (a pause) or resumed on.")),
  images: v.optional(v.pipe(StringMap, v.description("The snapshot images by container."))),
  bytes: v.optional(v.pipe(Int64, v.description("A pause's committed size."))),
});
export type PendingEvent = v.InferOutput<typeof PendingEvent>;

/** SandboxSnapshotStatus is written by hosts (phases) and the snapshot agent (commits). */
export const SandboxSnapshotStatus = v.object({
  phase: v.optional(
    v.pipe(
      v.picklist(Object.values(SNAPSHOT_PHASE)),
      v.description("Committing, Committed, Paused, Resuming, Resumed or Failed."),
    ),
  ),
  observedGeneration: v.optional(
    v.pipe(Int64, v.description("The spec generation whose source the agent committed (or failed).")),
  ),
  images: v.optional(
    v.pipe(StringMap, v.description("Snapshot images by container (`<repo>:g<generation>@sha256:...`).")),
  ),
  staleImages: v.optional(
    v.pipe(
      StringMap,
      v.description("Images of an earlier pause, deleted by the agent once this one is paused."),
    ),
  ),
  bytes: v.optional(v.pipe(Int64, v.description("Size of the committed layers."))),
  committedAt: v.optional(Time),
  pausedAt: v.optional(Time),
  resumedAt: v.optional(Time),
  resumes: v.optional(v.pipe(Int32, v.minValue(0), v.description("How many times the sandbox was resumed."))),
  resume: v.optional(SnapshotResume),
  recorded: v.optional(
    v.pipe(
      v.object({
        paused: v.optional(v.pipe(Int32, v.minValue(0), v.description("The last pause the history holds."))),
        resumed: v.optional(
          v.pipe(Int32, v.minValue(0), v.description("The last resume the history holds.")),
        ),
        ended: v.optional(
          v.pipe(
            v.boolean(),
            v.description(
              "The history holds the terminal record of the sandbox, which ended paused (its snapshot deleted).",
            ),
          ),
        ),
      }),
      v.description(
        "What the history has recorded: the last pause and resume (their n) and, once a paused sandbox ended, its terminal record. Written by hosts after the history write, so one not yet recorded (the history was down, a host died) is written by the tick's sweep; the snapshot agent lets a deleted snapshot go only once nothing is owed.",
      ),
    ),
  ),
  pendingEvents: v.optional(
    v.pipe(
      v.array(PendingEvent),
      v.maxLength(MAX_PENDING_EVENTS),
      v.description(
        "Events of earlier pauses and resumes the history did not hold yet when a new pause replaced their facts (the history was down): written by the tick's sweep, then removed.",
      ),
    ),
  ),
  message: v.optional(v.pipe(v.string(), v.description("Why the last commit failed."))),
  conditions: v.optional(Conditions),
});
export type SandboxSnapshotStatus = v.InferOutput<typeof SandboxSnapshotStatus>;

/** SandboxSnapshot is the kind. */
export const SandboxSnapshot = kindObject(KIND.SANDBOX_SNAPSHOT, SandboxSnapshotSpec, SandboxSnapshotStatus);
export type SandboxSnapshot = v.InferOutput<typeof SandboxSnapshot>;

/** SandboxSnapshotList is a list of SandboxSnapshots. */
export const SandboxSnapshotList = listObject(`${KIND.SANDBOX_SNAPSHOT}List`, SandboxSnapshot);
export type SandboxSnapshotList = v.InferOutput<typeof SandboxSnapshotList>;
