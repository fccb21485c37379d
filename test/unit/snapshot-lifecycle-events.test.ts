import { describe, expect, it } from "vitest";
import { MAX_PENDING_EVENTS, type SandboxSnapshot, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import {
  carriedEvents,
  endUnrecorded,
  owesHistory,
  recordedStatus,
  unrecordedEvents,
} from "../../lib/snapshots/lifecycle-events.ts";
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

/** deleted is `s` being deleted (a kill, its retention, its resumed sandbox's end). */
function deleted(s: SandboxSnapshot): SandboxSnapshot {
  return { ...s, metadata: { ...s.metadata, deletionTimestamp: "2026-12-02T09:59:00Z" } };
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

  it("a deleted snapshot owes its latest pause and resume as any other (they landed before the end)", () => {
    expect(kinds(deleted(at(PAUSED, 0)))).toEqual([["paused", 1]]);
    expect(kinds(deleted(at(RESUMED, 1, { paused: 1 })))).toEqual([["resumed", 1]]);
    expect(kinds(deleted(at(RESUMED, 1, { paused: 1, resumed: 1 })))).toEqual([]);
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

describe("carriedEvents: a history down through several pauses loses none", () => {
  it("a new pause carries the events of the pause and resume before it that are still owed", () => {
    const s = at(RESUMED, 1, { paused: 1 });
    expect(carriedEvents(s, NOW)).toEqual([
      { kind: "resumed", n: 1, at: "2026-12-02T09:30:00Z", podName: "python-y", images: G1 },
    ]);
    expect(carriedEvents(at(RESUMED, 1, { paused: 1, resumed: 1 }), NOW)).toEqual([]);
  });

  it("carried events are owed first, with the sandbox's fields, and gone once written", () => {
    // Cycle 1 never reached the history; the second pause carries it and is Paused itself now.
    const first = at(RESUMED, 1);
    const second = at(PAUSED, 1);
    second.status = {
      ...second.status,
      pausedAt: "2026-12-02T09:50:00Z",
      pendingEvents: carriedEvents(first, NOW),
    };
    const owed = unrecordedEvents(second, NOW);
    expect(owed.map((e) => [e.kind, e.n, e.at])).toEqual([
      ["paused", 1, "2026-12-02T09:00:00Z"],
      ["resumed", 1, "2026-12-02T09:30:00Z"],
      ["paused", 2, "2026-12-02T09:50:00Z"],
    ]);
    expect(owed[0]).toMatchObject({
      sandboxId: "sbx-1",
      namespace: "team-a",
      poolName: "python",
      team: "research",
    });
    const status = recordedStatus(second, owed);
    expect(status.pendingEvents).toBeUndefined();
    expect(status.recorded).toEqual({ paused: 2, resumed: 1 });
    expect(unrecordedEvents({ ...second, status }, NOW)).toEqual([]);
    // Written in part (another writer's list): the rest stays carried.
    const partly = recordedStatus(second, owed.slice(0, 1));
    expect(partly.pendingEvents?.map((p) => [p.kind, p.n])).toEqual([["resumed", 1]]);
  });

  it("a deleted snapshot owes what it carries, then its latest facts", () => {
    const s = at(PAUSED, 1, { paused: 1, resumed: 1 });
    s.status = { ...s.status, pendingEvents: carriedEvents(at(RESUMED, 1), NOW) };
    expect(kinds(deleted(s))).toEqual([
      ["paused", 1],
      ["resumed", 1],
      ["paused", 2],
    ]);
  });

  it("keeps at most MAX_PENDING_EVENTS, the latest", () => {
    const s = at(RESUMED, 40);
    s.status = {
      ...s.status,
      pendingEvents: Array.from({ length: MAX_PENDING_EVENTS }, (_, i) => ({
        kind: "paused" as const,
        n: i + 1,
        at: "2026-12-02T08:00:00Z",
        podName: "python-x",
      })),
    };
    const carried = carriedEvents(s, NOW);
    expect(carried).toHaveLength(MAX_PENDING_EVENTS);
    expect(carried.at(-1)).toMatchObject({ kind: "resumed", n: 40 });
    expect(carried[0]).toMatchObject({ kind: "paused", n: 3 });
  });
});

describe("what a deleted snapshot owes the history before its agent lets it go", () => {
  it.each<[string, SandboxSnapshot, boolean, boolean]>([
    ["a live Paused one, all recorded: its end is not here yet", at(PAUSED, 0, { paused: 1 }), false, false],
    ["a live Paused one owing its pause: owed, not its end", at(PAUSED, 0), false, true],
    [
      "a killed Paused one, events recorded: its record owed",
      deleted(at(PAUSED, 0, { paused: 1 })),
      true,
      true,
    ],
    [
      "a killed Paused one, its record written",
      deleted(at(PAUSED, 0, { paused: 1, ended: true })),
      false,
      false,
    ],
    [
      "a killed Paused one owing its pause, record written",
      deleted(at(PAUSED, 0, { ended: true })),
      false,
      true,
    ],
    [
      "a Resumed one whose sandbox ended (the pod's release records it), all recorded",
      deleted(at(RESUMED, 1, { paused: 1, resumed: 1 })),
      false,
      false,
    ],
    ["an abandoned pause (Committing), nothing carried", deleted(at(COMMITTING, 0)), false, false],
  ])("%s: end %s, owes %s", (_name, s, end, owes) => {
    expect(endUnrecorded(s)).toBe(end);
    expect(owesHistory(s)).toBe(owes);
  });

  it("a deleted one that carries events owes them, whatever its phase", () => {
    const s = at(COMMITTING, 1, { paused: 1, resumed: 1 });
    s.status = { ...s.status, pendingEvents: carriedEvents(at(RESUMED, 1), NOW) };
    expect(owesHistory(deleted(s))).toBe(true);
    expect(owesHistory(deleted({ ...s, status: recordedStatus(s, unrecordedEvents(s, NOW)) }))).toBe(false);
  });
});
