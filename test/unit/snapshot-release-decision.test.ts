import { describe, expect, it } from "vitest";
import { isPausedLeftover, sandboxPodOf } from "../../lib/claims/sandbox-pod.ts";
import {
  INCARNATION_ANNOTATION,
  RESUME_ATTEMPT_ANNOTATION,
  STARTED_AT_ANNOTATION,
  STOP_REASON_ANNOTATION,
  TEAM_LABEL,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import { SNAPSHOT_PHASE, type SnapshotPhase } from "../../lib/crd/sandbox-snapshot.ts";
import { isPauseOf, needsSnapshotRead, snapshotAtRelease } from "../../lib/snapshots/release-decision.ts";
import { resumeStart } from "../../lib/snapshots/snapshot-state.ts";
import { runningPod, snapshot } from "../support/snapshot-fixtures.ts";

// What a release does to a paused sandbox's snapshot, which pod is the sandbox while a paused one
// is on its way back to the pool, and a resume of a pause whose pod was never released.

const { PAUSED, RESUMING, RESUMED, COMMITTED, COMMITTING, FAILED } = SNAPSHOT_PHASE;
const NOW = new Date("2026-12-02T10:00:00Z");
const resumed = (o: { attempt?: string; started?: boolean; reason?: string; incarnation?: string } = {}) =>
  runningPod({
    annotations: {
      [INCARNATION_ANNOTATION]: o.incarnation ?? "1",
      [RESUME_ATTEMPT_ANNOTATION]: o.attempt ?? "a",
      ...(o.started === false ? {} : { [STARTED_AT_ANNOTATION]: "2026-12-02T09:00:00Z" }),
      ...(o.reason ? { [STOP_REASON_ANNOTATION]: o.reason } : {}),
    },
  });
const resumedSnapshot = (phase: SnapshotPhase = RESUMED, attempt = "a") =>
  snapshot(phase, { resumes: 1, resume: { attempt, until: "2026-12-02T10:01:00Z", pod: "python-x" } });

describe("snapshotAtRelease", () => {
  it("deletes the snapshot of a resumed sandbox that ended", () => {
    expect(snapshotAtRelease(resumed(), resumedSnapshot())).toEqual({ kind: "delete" });
  });
  it("gives the snapshot back to Paused when the resume's pod never ran (a failed pull, a startup timeout)", () => {
    expect(snapshotAtRelease(resumed({ started: false }), resumedSnapshot())).toEqual({
      kind: "back-to-paused",
    });
    expect(snapshotAtRelease(resumed({ started: false }), resumedSnapshot(RESUMING))).toEqual({
      kind: "back-to-paused",
    });
  });
  it("leaves a snapshot that is not this pod's resume (a lost race), gone, or being deleted alone", () => {
    expect(snapshotAtRelease(resumed({ attempt: "old" }), resumedSnapshot())).toEqual({ kind: "none" });
    expect(snapshotAtRelease(resumed(), undefined)).toEqual({ kind: "none" });
    expect(snapshotAtRelease(resumed(), snapshot(RESUMED, { resumes: 1, deleting: true }))).toEqual({
      kind: "none",
    });
    expect(
      snapshotAtRelease(runningPod({ annotations: { [INCARNATION_ANNOTATION]: "1" } }), resumedSnapshot()),
    ).toEqual({ kind: "none" });
  });
  it("reads the snapshot only for a resumed pod that did not stop for a pause", () => {
    expect(needsSnapshotRead(resumed())).toBe(true);
    expect(needsSnapshotRead(resumed({ reason: "Paused" }))).toBe(false);
    expect(needsSnapshotRead(runningPod())).toBe(false);
    expect(needsSnapshotRead(runningPod({ id: "" }))).toBe(false);
  });
});

describe("isPauseOf", () => {
  it("is a pause of this very pod not yet resumed: a kill of the pod ends it", () => {
    for (const phase of [COMMITTING, COMMITTED, PAUSED, FAILED])
      expect(isPauseOf(snapshot(phase), runningPod())).toBe(true);
    expect(isPauseOf(snapshot(PAUSED, { podUID: "uid-0" }), runningPod())).toBe(false);
    expect(isPauseOf(resumedSnapshot(), runningPod())).toBe(false);
    expect(isPauseOf(resumedSnapshot(RESUMING), runningPod())).toBe(false);
    expect(isPauseOf(snapshot(PAUSED, { deleting: true }), runningPod())).toBe(false);
    expect(isPauseOf(undefined, runningPod())).toBe(false);
  });
});

describe("sandboxPodOf", () => {
  const tenant = { team: "t", user: "u" };
  const owned = (name: string, annotations: Record<string, string> = {}) => {
    const pod = runningPod({ labels: { [TEAM_LABEL]: "t", [USER_LABEL]: "u" }, annotations });
    return { ...pod, metadata: { ...pod.metadata, name } };
  };
  it("skips the pod a pause gave back and prefers the latest incarnation", () => {
    const leftover = owned("a-old", { [STOP_REASON_ANNOTATION]: "Paused" });
    const back = owned("b-new", { [INCARNATION_ANNOTATION]: "1" });
    expect(isPausedLeftover(leftover)).toBe(true);
    expect(sandboxPodOf([leftover, back], tenant)?.metadata?.name).toBe("b-new");
    expect(sandboxPodOf([leftover], tenant)).toBeUndefined();
    expect(
      sandboxPodOf([owned("x"), owned("y", { [INCARNATION_ANNOTATION]: "2" })], tenant)?.metadata?.name,
    ).toBe("y");
    expect(sandboxPodOf([owned("x")], { team: "other", user: "u" })).toBeUndefined();
  });
});

describe("resumeStart of a pause whose pod was not released yet", () => {
  it("finishes the pause first when the recorded pod still runs the sandbox, claims otherwise", () => {
    expect(resumeStart(snapshot(PAUSED), NOW, [], runningPod())).toEqual({ kind: "finish-pause" });
    expect(resumeStart(snapshot(PAUSED), NOW, [], runningPod({ phase: "stopping" }))).toEqual({
      kind: "claim",
    });
    expect(resumeStart(snapshot(PAUSED), NOW, [], undefined)).toEqual({ kind: "claim" });
  });
});
