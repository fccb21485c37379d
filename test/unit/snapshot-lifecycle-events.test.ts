import { describe, expect, it } from "vitest";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { recordedStatus, unrecordedEvents } from "../../lib/snapshots/lifecycle-events.ts";
import { snapshot } from "../support/snapshot-fixtures.ts";

// The outbox of a snapshot's history events, on plain data: which pause and resume the history
// still lacks, and the status once they are written.

const NOW = new Date("2026-12-02T10:00:00Z");
const { COMMITTING, PAUSED, RESUMING, RESUMED } = SNAPSHOT_PHASE;
const G1 = { sandbox: "reg/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:aa" };

/** at is a snapshot in `phase` after `resumes` resumes, paused and resumed at fixed times, on G1. */
function at(phase: (typeof SNAPSHOT_PHASE)[keyof typeof SNAPSHOT_PHASE], resumes: number, recorded = {}) {
  const s = snapshot(phase, { resumes, images: G1 });
  s.status = {
    ...s.status,
    pausedAt: "2026-12-02T09:00:00Z",
    resumedAt: "2026-12-02T09:30:00Z",
    bytes: 4096,
    resume: { attempt: "a", until: "2026-12-02T09:31:00Z", pod: "python-y" },
    recorded,
  };
  return s;
}

const kinds = (s: SandboxSnapshot) => unrecordedEvents(s, NOW).map((e) => [e.kind, e.n]);

describe("unrecordedEvents", () => {
  it("a pause just marked Paused owes its event: at pausedAt, the pod it left, its images and size", () => {
    expect(unrecordedEvents(at(PAUSED, 0), NOW)).toEqual([
      {
        sandboxId: "sbx-1",
        namespace: "team-a",
        poolName: "python",
        team: "research",
        images: G1,
        kind: "paused",
        n: 1,
        at: "2026-12-02T09:00:00Z",
        podName: "python-x",
        bytes: 4096,
      },
    ]);
  });

  it.each<[string, SandboxSnapshot, [string, number][]]>([
    ["Committing: no pause done yet", at(COMMITTING, 0), []],
    ["Paused, recorded", at(PAUSED, 0, { paused: 1 }), []],
    ["Resuming: the pause still owed", at(RESUMING, 0), [["paused", 1]]],
    [
      "Resumed once, nothing recorded",
      at(RESUMED, 1),
      [
        ["paused", 1],
        ["resumed", 1],
      ],
    ],
    ["Resumed once, the pause recorded", at(RESUMED, 1, { paused: 1 }), [["resumed", 1]]],
    ["Resumed once, both recorded", at(RESUMED, 1, { paused: 1, resumed: 1 }), []],
    [
      "Paused a second time, the first cycle recorded",
      at(PAUSED, 1, { paused: 1, resumed: 1 }),
      [["paused", 2]],
    ],
    ["a re-pause under way: the resume still owed, no pause", at(COMMITTING, 1, { paused: 1 }), []],
  ])("%s → %j", (_name, s, owed) => {
    expect(kinds(s)).toEqual(owed);
  });

  it("a deleted snapshot owes nothing (its sandbox ended: the terminal record says so)", () => {
    const s = at(PAUSED, 0);
    s.metadata = { ...s.metadata, deletionTimestamp: "2026-12-02T09:59:00Z" };
    expect(unrecordedEvents(s, NOW)).toEqual([]);
  });

  it("the resume event: at resumedAt, on the pod it resumed on, without a size", () => {
    const [, resumed] = unrecordedEvents(at(RESUMED, 1), NOW);
    expect(resumed).toMatchObject({ kind: "resumed", n: 1, at: "2026-12-02T09:30:00Z", podName: "python-y" });
    expect(resumed).not.toHaveProperty("bytes");
  });
});

describe("recordedStatus", () => {
  it("raises status.recorded to the events written, and nothing is owed after", () => {
    const s = at(RESUMED, 1);
    const status = recordedStatus(s, unrecordedEvents(s, NOW));
    expect(status.recorded).toEqual({ paused: 1, resumed: 1 });
    expect(unrecordedEvents({ ...s, status }, NOW)).toEqual([]);
    expect(recordedStatus({ ...s, status }, []).recorded).toEqual({ paused: 1, resumed: 1 });
  });
});
