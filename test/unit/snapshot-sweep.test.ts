import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { PAUSING_ANNOTATION, RESUME_ATTEMPT_ANNOTATION } from "../../lib/crd/keys.ts";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { pausedRecord } from "../../lib/snapshots/paused-record.ts";
import { type SnapshotSweep, snapshotSweep } from "../../lib/snapshots/snapshot-sweep.ts";
import { runningPod, snapshot } from "../support/snapshot-fixtures.ts";

// The tick's decision for each SandboxSnapshot (one case per line of snapshotSweep's doc comment),
// and the terminal record of a paused sandbox that ends (its retention or a kill).

const NOW = new Date("2026-12-02T10:00:00Z");
const PAST = "2026-12-02T09:59:59Z";
const FUTURE = "2026-12-02T10:00:01Z";
const { COMMITTING, COMMITTED, PAUSED, RESUMING, RESUMED, FAILED } = SNAPSHOT_PHASE;

/** source is the pod the pause recorded, still running the sandbox; ended is it restarted since. */
const source = runningPod();
const ended = runningPod({ containerID: "containerd://c2" });
/** heldRestarted is the pod marked by the pause (generation 1), a container restarted since. */
const heldRestarted = runningPod({
  containerID: "containerd://c2",
  annotations: { [PAUSING_ANNOTATION]: "1" },
});

/** resumedPod is a live pod another resume claimed, carrying its attempt. */
function resumedPod(attempt: string, terminating = false): V1Pod {
  const pod = runningPod({
    uid: "uid-9",
    annotations: { [RESUME_ATTEMPT_ANNOTATION]: attempt },
    terminating,
  });
  pod.metadata!.name = "python-y";
  return pod;
}

type Case = [string, SandboxSnapshot, V1Pod[], V1Pod | undefined, SnapshotSweep];

function cases(list: Case[]) {
  it.each(list)("%s → %j", (_name, s, byId, sourcePod, next) => {
    expect(snapshotSweep(s, byId, sourcePod, NOW)).toEqual(next);
  });
}

describe("snapshotSweep", () => {
  describe("a committed pause, or a Paused one whose pod its pause still has to release → completePause", () => {
    cases([
      ["Committed, pod runs it", snapshot(COMMITTED), [source], source, { kind: "complete-pause" }],
      ["Committed, pod ended", snapshot(COMMITTED), [], ended, { kind: "complete-pause" }],
      ["Paused, pod still runs it", snapshot(PAUSED), [source], source, { kind: "complete-pause" }],
      [
        "Paused, pod held by its mark, a container restarted since",
        snapshot(PAUSED),
        [heldRestarted],
        heldRestarted,
        { kind: "complete-pause" },
      ],
      ["Paused, unmarked pod, a container restarted", snapshot(PAUSED), [ended], ended, { kind: "none" }],
      [
        "Paused past retention, pod still runs it",
        snapshot(PAUSED, { retainUntil: PAST }),
        [source],
        source,
        { kind: "complete-pause" },
      ],
    ]);
  });

  describe("a failed pause nobody took back", () => {
    cases([
      [
        "never resumed, still runs",
        snapshot(FAILED),
        [source],
        source,
        { kind: "delete", why: "its pause failed", record: false },
      ],
      [
        "never resumed, ended",
        snapshot(FAILED),
        [],
        undefined,
        { kind: "delete", why: "the sandbox ended while pausing", record: false },
      ],
      [
        "resumed before, still runs",
        snapshot(FAILED, { resumes: 1 }),
        [source],
        source,
        {
          kind: "back-to-resumed",
          why: "its pause failed",
          status: { ...snapshot(FAILED, { resumes: 1 }).status, phase: RESUMED, images: {} },
        },
      ],
    ]);
  });

  describe("a pause whose pod no longer runs the sandbox as recorded before the commit", () => {
    const why = { kind: "delete", why: "the sandbox ended while pausing", record: false } as const;
    cases([
      [
        "Committing, never resumed, container restarted",
        snapshot(COMMITTING),
        [ended],
        ended,
        { kind: "delete", why: "a container restarted while pausing", record: false },
      ],
      ["Committing, pod gone", snapshot(COMMITTING), [], undefined, why],
      ["Committing, pod runs it", snapshot(COMMITTING), [source], source, { kind: "none" }],
      [
        "Committed of an earlier generation, pod gone",
        snapshot(COMMITTED, { generation: 2, observedGeneration: 1 }),
        [],
        undefined,
        why,
      ],
      [
        "Committed of an earlier generation, pod runs it",
        snapshot(COMMITTED, { generation: 2, observedGeneration: 1 }),
        [source],
        source,
        { kind: "none" },
      ],
      [
        "Failed of an earlier generation, pod gone",
        snapshot(FAILED, { generation: 2, observedGeneration: 1 }),
        [],
        undefined,
        why,
      ],
    ]);

    it("a resumed sandbox whose container restarted while committing goes back to Resumed, keeping the images it runs", () => {
      const g1 = "reg/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:aa";
      const pod = runningPod({ containerID: "containerd://c2" });
      pod.spec!.containers[0]!.image = g1;
      const s = snapshot(COMMITTING, {
        generation: 2,
        observedGeneration: 1,
        resumes: 1,
        images: { sandbox: g1 },
      });
      const d = snapshotSweep(s, [pod], pod, NOW);
      expect(d).toEqual({
        kind: "back-to-resumed",
        why: "a container restarted while pausing",
        status: { ...s.status, phase: RESUMED, images: { sandbox: g1 } },
      });
    });
  });

  describe("a pause past its deadline, its commit not answered → abandoned", () => {
    cases([
      [
        "Committing past its deadline, never resumed",
        snapshot(COMMITTING, { commitUntil: PAST }),
        [source],
        source,
        { kind: "delete", why: "its commit did not finish by the pause's deadline", record: false },
      ],
      [
        "Committing within its deadline",
        snapshot(COMMITTING, { commitUntil: FUTURE }),
        [source],
        source,
        { kind: "none" },
      ],
      [
        "Committed past its deadline (the commit came: completed, not abandoned)",
        snapshot(COMMITTED, { commitUntil: PAST }),
        [source],
        source,
        { kind: "complete-pause" },
      ],
    ]);

    it("a resumed sandbox's pause past its deadline goes back to Resumed", () => {
      const g1 = "reg/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:aa";
      const pod = runningPod();
      pod.spec!.containers[0]!.image = g1;
      const s = snapshot(COMMITTING, { commitUntil: PAST, resumes: 2, images: { sandbox: g1 } });
      expect(snapshotSweep(s, [pod], pod, NOW)).toMatchObject({
        kind: "back-to-resumed",
        status: { phase: RESUMED, images: { sandbox: g1 }, resumes: 2 },
      });
    });
  });

  describe("a Resuming one: waits its time, then Resumed when a pod carries its attempt, else Paused", () => {
    const resuming = (until: string, attempt = "att-1") => snapshot(RESUMING, { resume: { attempt, until } });
    cases([
      ["within its time, no pod", resuming(FUTURE), [], undefined, { kind: "none" }],
      [
        "past its time, the attempt's pod",
        resuming(PAST),
        [resumedPod("att-1")],
        undefined,
        { kind: "resumed", pod: "python-y" },
      ],
      [
        "exactly at its time, the attempt's pod",
        resuming("2026-12-02T10:00:00Z"),
        [resumedPod("att-1")],
        undefined,
        { kind: "resumed", pod: "python-y" },
      ],
      [
        "past its time, another attempt's pod",
        resuming(PAST),
        [resumedPod("att-0")],
        undefined,
        { kind: "back-to-paused" },
      ],
      [
        "past its time, the attempt's pod terminating",
        resuming(PAST),
        [resumedPod("att-1", true)],
        undefined,
        { kind: "back-to-paused" },
      ],
      ["past its time, no pod", resuming(PAST), [], undefined, { kind: "back-to-paused" }],
      [
        "no time, no attempt, a pod without one",
        snapshot(RESUMING),
        [runningPod({ uid: "uid-9" })],
        undefined,
        { kind: "back-to-paused" },
      ],
    ]);
  });

  describe("a Paused one past its retention → deleted with the terminal record", () => {
    cases([
      [
        "past retention",
        snapshot(PAUSED, { retainUntil: PAST }),
        [],
        undefined,
        { kind: "delete", why: "its retention ended unresumed", record: true },
      ],
      [
        "exactly at retention",
        snapshot(PAUSED, { retainUntil: "2026-12-02T10:00:00Z" }),
        [],
        undefined,
        { kind: "delete", why: "its retention ended unresumed", record: true },
      ],
      ["within retention", snapshot(PAUSED, { retainUntil: FUTURE }), [], undefined, { kind: "none" }],
      [
        "released pod still stopping",
        snapshot(PAUSED),
        [runningPod({ phase: "stopping" })],
        runningPod({ phase: "stopping" }),
        { kind: "none" },
      ],
      ["no valid retention", snapshot(PAUSED, { retainUntil: "never" }), [], undefined, { kind: "none" }],
    ]);
  });

  describe("a Resumed one no pod carries → deleted", () => {
    cases([
      [
        "no pod",
        snapshot(RESUMED, { resumes: 1 }),
        [],
        undefined,
        { kind: "delete", why: "its resumed sandbox ended", record: false },
      ],
      [
        "only a terminating pod",
        snapshot(RESUMED, { resumes: 1 }),
        [resumedPod("att-1", true)],
        undefined,
        { kind: "delete", why: "its resumed sandbox ended", record: false },
      ],
      ["a live pod", snapshot(RESUMED, { resumes: 1 }), [resumedPod("att-1")], undefined, { kind: "none" }],
    ]);
  });

  describe("a snapshot being deleted is left to its finalizer; a paused one's end is recorded, once said so", () => {
    cases([
      ["Committed", snapshot(COMMITTED, { deleting: true }), [source], source, { kind: "none" }],
      [
        "Paused past retention (its deleter may have died before the record)",
        snapshot(PAUSED, { deleting: true, retainUntil: PAST }),
        [],
        undefined,
        { kind: "record-ended" },
      ],
      ["Paused, killed", snapshot(PAUSED, { deleting: true }), [], undefined, { kind: "record-ended" }],
      [
        "Paused, killed, its record written (status.recorded.ended)",
        snapshot(PAUSED, { deleting: true, recorded: { ended: true } }),
        [],
        undefined,
        { kind: "none" },
      ],
      ["Resumed, no pod", snapshot(RESUMED, { deleting: true }), [], undefined, { kind: "none" }],
    ]);
  });
});

describe("pausedRecord", () => {
  it("a paused sandbox's end: owner, pool, last pod, images asked for, metadata; no resources; Released", () => {
    const s = snapshot(PAUSED);
    s.spec.claim = {
      ...s.spec.claim,
      user: "alice",
      metadata: { run: "7" },
      containerImages: { sandbox: "py:1" },
    };
    expect(pausedRecord(s, new Date("2026-12-02T10:00:00.900Z"))).toEqual({
      sandboxId: "sbx-1",
      namespace: "team-a",
      poolName: "python",
      podName: "python-x",
      team: "research",
      user: "alice",
      terminatedAt: "2026-12-02T10:00:00Z",
      containerImages: { sandbox: "py:1" },
      metadata: { run: "7" },
      cpuMillis: 0,
      memoryBytes: 0,
      stopReason: "Released",
    });
  });

  it("no team, user or metadata: none written, metadata empty", () => {
    const s = snapshot(PAUSED);
    s.spec.claim = { containerImages: { sandbox: "py:1" }, team: "" };
    delete s.metadata!.namespace;
    const record = pausedRecord(s, NOW);
    expect(record).not.toHaveProperty("team");
    expect(record).not.toHaveProperty("user");
    expect(record).toMatchObject({ namespace: "", metadata: {}, terminatedAt: "2026-12-02T10:00:00Z" });
  });
});
