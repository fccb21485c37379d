// Plain-data pods and SandboxSnapshots for the pause/resume decision tests (lib/snapshots/): one
// running sandbox pod, and a snapshot of it in any phase, so each test changes only what it tests.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxSnapshot, SnapshotPhase } from "../../lib/crd/sandbox-snapshot.ts";

/** SANDBOX is the id of the fixtures' sandbox. */
export const SANDBOX = "sbx-1";

/** RunningPodOptions change one thing of runningPod's pod. */
export interface RunningPodOptions {
  uid?: string;
  id?: string;
  phase?: string;
  containerID?: string;
  terminating?: boolean;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/**
 * runningPod is pod `python-x` (uid `uid-1`, node `n1`) running sandbox SANDBOX in one container
 * `sandbox` (containerd://c1, image py:1).
 */
export function runningPod(o: RunningPodOptions = {}): V1Pod {
  return {
    metadata: {
      name: "python-x",
      namespace: "team-a",
      uid: o.uid ?? "uid-1",
      labels: {
        [SANDBOX_POOL_LABEL]: "python",
        [SANDBOX_PHASE_LABEL]: o.phase ?? "running",
        ...(o.id === "" ? {} : { [SANDBOX_ID_LABEL]: o.id ?? SANDBOX }),
        ...o.labels,
      },
      annotations: { ...o.annotations },
      ...(o.terminating ? { deletionTimestamp: new Date("2026-12-02T09:00:00Z") } : {}),
    },
    spec: { nodeName: "n1", containers: [{ name: "sandbox", image: "py:1" }] },
    status: {
      phase: "Running",
      podIP: "10.0.0.5",
      containerStatuses: [
        {
          name: "sandbox",
          image: "py:1",
          imageID: "",
          containerID: o.containerID ?? "containerd://c1",
          ready: true,
          restartCount: 0,
          state: { running: {} },
        },
      ],
    },
  };
}

/** SnapshotOptions set a snapshot's generation and status fields. */
export interface SnapshotOptions {
  generation?: number;
  observedGeneration?: number;
  resumes?: number;
  resume?: { attempt: string; until: string; pod?: string };
  podUID?: string;
  deleting?: boolean;
  retainUntil?: string;
  /** commitUntil is the pause's deadline (spec.source.commitUntil); none by default. */
  commitUntil?: string;
  images?: Record<string, string>;
  staleImages?: Record<string, string>;
  committedAt?: string;
  recorded?: { paused?: number; resumed?: number; ended?: boolean };
}

/**
 * snapshot is SandboxSnapshot SANDBOX of pod `python-x` (runningPod's) at generation 1, in `phase`
 * (none: Committing); observedGeneration defaults to the generation.
 */
export function snapshot(phase: SnapshotPhase | undefined, o: SnapshotOptions = {}): SandboxSnapshot {
  const generation = o.generation ?? 1;
  return {
    metadata: {
      name: SANDBOX,
      namespace: "team-a",
      generation,
      resourceVersion: "7",
      ...(o.deleting ? { deletionTimestamp: "2026-12-02T09:00:00Z" } : {}),
    },
    spec: {
      sandboxId: SANDBOX,
      pool: "python",
      source: {
        node: "n1",
        pod: "python-x",
        podUID: o.podUID ?? "uid-1",
        containers: [{ name: "sandbox", containerID: "containerd://c1", image: "py:1" }],
        ...(o.commitUntil ? { commitUntil: o.commitUntil } : {}),
      },
      claim: { containerImages: { sandbox: "py:1" }, team: "research" },
      retainUntil: o.retainUntil ?? "2026-12-09T10:00:00Z",
    },
    status: {
      ...(phase ? { phase } : {}),
      observedGeneration: o.observedGeneration ?? generation,
      ...(o.resumes !== undefined ? { resumes: o.resumes } : {}),
      ...(o.resume ? { resume: o.resume } : {}),
      ...(o.images ? { images: o.images } : {}),
      ...(o.staleImages ? { staleImages: o.staleImages } : {}),
      ...(o.committedAt ? { committedAt: o.committedAt } : {}),
      ...(o.recorded ? { recorded: o.recorded } : {}),
    },
  };
}
