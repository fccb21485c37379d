import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  PAUSING_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION as RESUME_ATTEMPT,
  SANDBOX_ID_LABEL,
  SANDBOX_POOL_LABEL,
  TEAM_LABEL,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_FINALIZER, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { type PausePlan, pausePlan } from "../../lib/snapshots/pause-plan.ts";
import {
  heldByPause,
  isCommitted,
  isFailed,
  pauseCompletion,
  pauseStart,
  phaseOf,
  resumeStart,
  snapshotObject,
} from "../../lib/snapshots/snapshot-state.ts";
import { runningPod, SANDBOX, snapshot } from "../support/snapshot-fixtures.ts";

// The pause and resume decisions over one SandboxSnapshot, on plain data.

const NOW = new Date("2026-12-02T10:00:00Z");
const { COMMITTING, COMMITTED, PAUSED, RESUMING, RESUMED, FAILED } = SNAPSHOT_PHASE;

function okPlan(uid = "uid-1", team = "research", user?: string): Extract<PausePlan, { ok: true }> {
  const labels = { [TEAM_LABEL]: team, ...(user ? { [USER_LABEL]: user } : {}) };
  const p = pausePlan(runningPod({ uid, labels }), NOW, 3600);
  if (!p.ok) throw new Error(p.message);
  return p;
}

describe("phaseOf, isCommitted, isFailed", () => {
  it("a snapshot without a phase is Committing", () => {
    const s = snapshot(undefined);
    expect(phaseOf(s)).toBe(COMMITTING);
    expect(phaseOf({ ...s, status: undefined } as SandboxSnapshot)).toBe(COMMITTING);
    expect(phaseOf(snapshot(PAUSED))).toBe(PAUSED);
  });

  it.each<[string, SandboxSnapshot, boolean, boolean]>([
    ["Committed of this generation", snapshot(COMMITTED, { generation: 2 }), true, false],
    [
      "Committed of an earlier generation",
      snapshot(COMMITTED, { generation: 2, observedGeneration: 1 }),
      false,
      false,
    ],
    ["Failed of this generation", snapshot(FAILED, { generation: 2 }), false, true],
    [
      "Failed of an earlier generation",
      snapshot(FAILED, { generation: 2, observedGeneration: 1 }),
      false,
      false,
    ],
    ["Paused", snapshot(PAUSED), false, false],
    ["Committing", snapshot(COMMITTING), false, false],
  ])("%s: committed %s, failed %s", (_name, s, committed, failed) => {
    expect(isCommitted(s)).toBe(committed);
    expect(isFailed(s)).toBe(failed);
  });
});

describe("snapshotObject", () => {
  it("a new snapshot: named after the sandbox, owner labels, the finalizer, the pause's spec", () => {
    const plan = okPlan("uid-1", "research", "alice");
    expect(snapshotObject("team-a", plan)).toEqual({
      apiVersion: "agents.navix.sh/v1alpha1",
      kind: "SandboxSnapshot",
      metadata: {
        name: SANDBOX,
        namespace: "team-a",
        labels: {
          [SANDBOX_ID_LABEL]: SANDBOX,
          [SANDBOX_POOL_LABEL]: "python",
          [TEAM_LABEL]: "research",
          [USER_LABEL]: "alice",
        },
        finalizers: [SNAPSHOT_FINALIZER],
      },
      spec: {
        sandboxId: SANDBOX,
        pool: "python",
        source: plan.source,
        claim: plan.claim,
        retainUntil: "2026-12-02T11:00:00Z",
      },
    });
  });

  it("over an existing one: keeps its metadata, other labels, finalizers, env and status; new spec", () => {
    const existing = snapshot(RESUMED, { resumes: 1, podUID: "uid-0" });
    existing.metadata = {
      ...existing.metadata,
      labels: { other: "x", [TEAM_LABEL]: "old" },
      finalizers: ["x/y", SNAPSHOT_FINALIZER],
    };
    existing.spec.env = "env-1";
    const plan = okPlan("uid-2", "new team"); // not a label value: no team label written
    const out = snapshotObject("team-a", plan, existing);
    expect(out.metadata).toEqual({
      ...existing.metadata,
      labels: {
        other: "x",
        [TEAM_LABEL]: "old",
        [SANDBOX_ID_LABEL]: SANDBOX,
        [SANDBOX_POOL_LABEL]: "python",
      },
      finalizers: ["x/y", SNAPSHOT_FINALIZER],
    });
    expect(out.metadata?.resourceVersion).toBe("7");
    expect(out.spec).toEqual({
      sandboxId: SANDBOX,
      pool: "python",
      env: "env-1",
      source: { ...plan.source, podUID: "uid-2" },
      claim: { ...plan.claim, team: "new team" },
      retainUntil: "2026-12-02T11:00:00Z",
    });
    expect(out.status).toBe(existing.status);
  });
});

describe("pauseStart", () => {
  const plan = okPlan();
  it.each<[string, SandboxSnapshot | undefined, ReturnType<typeof pauseStart>]>([
    ["no snapshot", undefined, { kind: "create" }],
    ["Committing this pod", snapshot(COMMITTING), { kind: "wait" }],
    ["Committed this pod", snapshot(COMMITTED), { kind: "wait" }],
    ["Committing another pod", snapshot(COMMITTING, { podUID: "uid-0" }), { kind: "replace" }],
    ["Committed another pod", snapshot(COMMITTED, { podUID: "uid-0" }), { kind: "replace" }],
    ["Resumed", snapshot(RESUMED, { resumes: 1, podUID: "uid-0" }), { kind: "replace" }],
    ["Resumed, recorded this pod", snapshot(RESUMED, { resumes: 1 }), { kind: "replace" }],
    ["Failed this pod", snapshot(FAILED), { kind: "replace" }],
    ["Failed another pod", snapshot(FAILED, { podUID: "uid-0" }), { kind: "replace" }],
    [
      "Paused",
      snapshot(PAUSED),
      { kind: "refuse", reason: "paused", message: "sandbox sbx-1 is already paused" },
    ],
    [
      "Resuming",
      snapshot(RESUMING),
      { kind: "refuse", reason: "not-running", message: "sandbox sbx-1 is resuming" },
    ],
    [
      "being deleted",
      snapshot(COMMITTING, { deleting: true }),
      { kind: "refuse", reason: "not-running", message: "sandbox sbx-1 is being deleted" },
    ],
  ])("%s → %j", (_name, existing, start) => {
    expect(pauseStart(existing, plan, NOW)).toEqual(start);
  });

  it("replaces a commit of this pod whose container restarted since (the agent would refuse it)", () => {
    const restarted = pausePlan(runningPod({ containerID: "containerd://c2" }), NOW, 3600);
    if (!restarted.ok) throw new Error(restarted.message);
    expect(pauseStart(snapshot(COMMITTING), restarted, NOW)).toEqual({ kind: "replace" });
  });

  it("joins a commit of this pod within its deadline, replaces one past it (abandoned)", () => {
    const plan = okPlan();
    const at = (commitUntil: string) => pauseStart(snapshot(COMMITTING, { commitUntil }), plan, NOW);
    expect(at("2026-12-02T10:00:01Z")).toEqual({ kind: "wait" });
    expect(at("2026-12-02T10:00:00Z")).toEqual({ kind: "replace" });
    expect(pauseStart(snapshot(COMMITTED, { commitUntil: "2026-12-02T09:00:00Z" }), plan, NOW)).toEqual({
      kind: "wait",
    });
  });
});

describe("pauseCompletion", () => {
  const runs = runningPod();
  const marked = runningPod({ annotations: { [PAUSING_ANNOTATION]: "1" } }); // marked for generation 1
  const restarted = runningPod({ containerID: "containerd://c2" }); // a container restarted since the pause
  const released = runningPod({ id: "", phase: "idle" }); // the pod went back to the pool
  // The pause marked the pod, wrote Paused and died before the release; then a container restarted.
  const markedRestarted = runningPod({
    containerID: "containerd://c2",
    annotations: { [PAUSING_ANNOTATION]: "1" },
  });
  const restartedDuring = {
    kind: "delete",
    why: "a container restarted during its pause",
    record: false,
  } as const;
  const endedWhile = { kind: "delete", why: "the sandbox ended while pausing", record: false } as const;
  it.each<[string, SandboxSnapshot, V1Pod, ReturnType<typeof pauseCompletion>]>([
    ["Committed, pod runs it", snapshot(COMMITTED), runs, { kind: "mark-pod" }],
    ["Committed, pod runs it marked with this pause", snapshot(COMMITTED), marked, { kind: "mark-paused" }],
    [
      "Committed, pod marked by an earlier pause",
      snapshot(COMMITTED, { generation: 2 }),
      marked,
      { kind: "mark-pod" },
    ],
    ["Committed, never resumed, container restarted", snapshot(COMMITTED), restarted, restartedDuring],
    ["Committed, pod released", snapshot(COMMITTED, { resumes: 1 }), released, endedWhile],
    ["Paused, pod still runs it", snapshot(PAUSED), runs, { kind: "release" }],
    [
      "Paused, pod marked by it, a container restarted since",
      snapshot(PAUSED),
      markedRestarted,
      { kind: "release" },
    ],
    ["Paused, unmarked pod, a container restarted", snapshot(PAUSED), restarted, { kind: "none" }],
    [
      "Paused, marked pod already released (Stopping)",
      snapshot(PAUSED),
      runningPod({
        phase: "stopping",
        containerID: "containerd://c2",
        annotations: { [PAUSING_ANNOTATION]: "1" },
      }),
      { kind: "none" },
    ],
    ["Failed, never resumed, pod released", snapshot(FAILED), released, endedWhile],
    [
      "Failed, never resumed, container restarted",
      snapshot(FAILED),
      restarted,
      { kind: "delete", why: "the pause failed", record: false },
    ],
    ["Failed, never resumed, runs", snapshot(FAILED), runs, { kind: "none" }],
    ["Failed, resumed before, pod released", snapshot(FAILED, { resumes: 1 }), released, endedWhile],
    [
      "Committed, generation not observed",
      snapshot(COMMITTED, { generation: 2, observedGeneration: 1 }),
      runs,
      { kind: "none" },
    ],
    [
      "Failed, generation not observed, ended",
      snapshot(FAILED, { generation: 2, observedGeneration: 1 }),
      released,
      { kind: "none" },
    ],
    ["Committing", snapshot(COMMITTING), runs, { kind: "none" }],
    ["Resumed", snapshot(RESUMED, { resumes: 1 }), runs, { kind: "none" }],
    ["Committed but being deleted", snapshot(COMMITTED, { deleting: true }), runs, { kind: "none" }],
  ])("%s → %j", (_name, s, pod, next) => {
    expect(pauseCompletion(s, pod)).toEqual(next);
  });

  it("a commit that came after the pause's deadline is abandoned, not completed (its caller was told so)", () => {
    const late = snapshot(COMMITTED, {
      commitUntil: "2026-12-02T10:00:00Z",
      committedAt: "2026-12-02T10:00:00.5Z",
    });
    expect(pauseCompletion(late, runs)).toEqual({
      kind: "delete",
      why: "its commit came after the pause's deadline",
      record: false,
    });
    const onTime = snapshot(COMMITTED, {
      commitUntil: "2026-12-02T10:00:00Z",
      committedAt: "2026-12-02T09:59:59.9Z",
    });
    expect(pauseCompletion(onTime, marked)).toEqual({ kind: "mark-paused" });
  });

  it("no pod at all: a committed pause is deleted, a Paused one left alone", () => {
    expect(pauseCompletion(snapshot(COMMITTED), undefined)).toEqual(endedWhile);
    expect(pauseCompletion(snapshot(PAUSED), undefined)).toEqual({ kind: "none" });
    expect(pauseCompletion(snapshot(PAUSED), runningPod({ phase: "stopping" }))).toEqual({ kind: "none" });
  });

  it("a resumed sandbox whose container restarted during its re-pause runs on: back to Resumed on the images its pod runs", () => {
    // It resumed on g1; the re-pause committed g2 (g1 moved to the stale images) when a container
    // restarted: the pod still runs g1, so g1 must stay and g2 go.
    const g1 = "reg/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:aa";
    const g2 = "reg/agentbox-snapshots/team-a/sbx-1/sandbox:g2@sha256:bb";
    const pod = runningPod({ containerID: "containerd://c2" });
    pod.spec!.containers[0]!.image = g1;
    const s = snapshot(COMMITTED, {
      generation: 2,
      resumes: 1,
      images: { sandbox: g2 },
      staleImages: { "sandbox:g1": g1 },
    });
    const next = pauseCompletion(s, pod);
    expect(next).toMatchObject({ kind: "back-to-resumed", why: "a container restarted during its pause" });
    if (next.kind !== "back-to-resumed") return;
    expect(next.status.phase).toBe(RESUMED);
    expect(next.status.images).toEqual({ sandbox: g1 });
    expect(next.status.staleImages).toEqual({ "sandbox:g2": g2 });
    expect(next.status.resumes).toBe(1);
  });
});

describe("resumeStart", () => {
  const future = "2026-12-02T10:00:01Z";
  const past = "2026-12-02T09:59:59Z";
  it.each<[string, SandboxSnapshot, ReturnType<typeof resumeStart>]>([
    ["Paused", snapshot(PAUSED), { kind: "claim" }],
    [
      "Resuming within its time",
      snapshot(RESUMING, { resume: { attempt: "a", until: future } }),
      { kind: "wait" },
    ],
    [
      "Resuming past its time",
      snapshot(RESUMING, { resume: { attempt: "a", until: past } }),
      { kind: "claim" },
    ],
    [
      "Resuming exactly at its time",
      snapshot(RESUMING, { resume: { attempt: "a", until: "2026-12-02T10:00:00Z" } }),
      { kind: "claim" },
    ],
    ["Resuming without a time", snapshot(RESUMING), { kind: "claim" }],
    ["Resumed", snapshot(RESUMED, { resumes: 1 }), { kind: "running" }],
    ["Failed (kept running)", snapshot(FAILED), { kind: "running" }],
    [
      "Committing",
      snapshot(COMMITTING),
      { kind: "refuse", reason: "pausing", message: "sandbox sbx-1 is pausing; try again shortly" },
    ],
    [
      "Committed",
      snapshot(COMMITTED),
      { kind: "refuse", reason: "pausing", message: "sandbox sbx-1 is pausing; try again shortly" },
    ],
    [
      "being deleted",
      snapshot(PAUSED, { deleting: true }),
      { kind: "refuse", reason: "not-found", message: "sandbox sbx-1 is being deleted" },
    ],
  ])("%s → %j", (_name, s, start) => {
    expect(resumeStart(s, NOW)).toEqual(start);
  });

  it("adopts a Resuming one past its time whose dead resume had claimed a live pod; claims otherwise", () => {
    const s = snapshot(RESUMING, { resume: { attempt: "a", until: past } });
    const claimed = runningPod({ annotations: { [RESUME_ATTEMPT]: "a" } });
    expect(resumeStart(s, NOW, [claimed])).toEqual({ kind: "adopt", pod: "python-x" });
    // Another attempt's pod, or a pod on its way out, is not this resume's claim.
    expect(resumeStart(s, NOW, [runningPod({ annotations: { [RESUME_ATTEMPT]: "b" } })])).toEqual({
      kind: "claim",
    });
    expect(
      resumeStart(s, NOW, [runningPod({ terminating: true, annotations: { [RESUME_ATTEMPT]: "a" } })]),
    ).toEqual({ kind: "claim" });
    // Within its time the resume is still under way: wait, whatever the pods.
    const live = snapshot(RESUMING, { resume: { attempt: "a", until: future } });
    expect(resumeStart(live, NOW, [claimed])).toEqual({ kind: "wait" });
  });

  it("finishes first a pause whose pod it still has to release, restarted or not; claims once it is released", () => {
    const paused = snapshot(PAUSED);
    const marked = { [PAUSING_ANNOTATION]: "1" };
    expect(resumeStart(paused, NOW, [], runningPod())).toEqual({ kind: "finish-pause" });
    const restarted = runningPod({ containerID: "containerd://c2", annotations: marked });
    expect(resumeStart(paused, NOW, [restarted], restarted)).toEqual({ kind: "finish-pause" });
    const released = runningPod({ phase: "stopping", annotations: marked });
    expect(resumeStart(paused, NOW, [], released)).toEqual({ kind: "claim" });
  });
});

describe("heldByPause", () => {
  const marked = (generation: string, o = {}) =>
    runningPod({ annotations: { [PAUSING_ANNOTATION]: generation }, ...o });

  it.each<[string, V1Pod, SandboxSnapshot | undefined, boolean]>([
    ["marked, its pause committed", marked("1"), snapshot(COMMITTED), true],
    ["marked, its snapshot Paused", marked("1"), snapshot(PAUSED), true],
    ["not marked", runningPod(), snapshot(PAUSED), false],
    ["marked, the snapshot gone", marked("1"), undefined, false],
    ["marked, the snapshot being deleted", marked("1"), snapshot(PAUSED, { deleting: true }), false],
    ["marked, the pause abandoned (back to Resumed)", marked("1"), snapshot(RESUMED, { resumes: 1 }), false],
    [
      "marked by an earlier pause than the snapshot's",
      marked("1"),
      snapshot(COMMITTED, { generation: 2 }),
      false,
    ],
    ["marked, the snapshot another pod's", marked("1"), snapshot(PAUSED, { podUID: "uid-2" }), false],
    ["marked, the pod another sandbox's now", marked("1", { id: "sbx-2" }), snapshot(PAUSED), false],
    ["a mark that is no generation", marked("one"), snapshot(PAUSED), false],
    ["marked, a failed commit", marked("1"), snapshot(FAILED), false],
  ])("%s → %s", (_name, pod, s, held) => {
    expect(heldByPause(pod, s)).toBe(held);
  });
});
