import { describe, expect, it } from "vitest";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { COMMIT_WAIT_MS } from "../../lib/snapshots/pause-plan.ts";
import { isUnanswered, pauseWait, pauseWaitStep } from "../../lib/snapshots/pause-wait.ts";
import { snapshot } from "../support/snapshot-fixtures.ts";

// A pause caller's next step on the snapshot it sees while it waits for its generation's commit.

const NOW = new Date("2026-12-02T10:00:00Z");
const LATER = new Date("2026-12-02T10:01:00Z");
const UNTIL = "2026-12-02T10:00:30Z";
const { COMMITTING, COMMITTED, PAUSED, RESUMING, RESUMED, FAILED } = SNAPSHOT_PHASE;

/** waitOn is the caller's wait after it joined generation 2 of a pause due at UNTIL. */
const waitOn = () => pauseWait(snapshot(COMMITTING, { generation: 2, commitUntil: UNTIL }), NOW);

describe("pauseWait", () => {
  it("waits on the generation it joined until the pause's own deadline", () => {
    expect(waitOn()).toEqual({ generation: 2, deadline: Date.parse(UNTIL), dated: true });
  });

  it("gives a snapshot without a deadline the default wait from its first read", () => {
    const w = pauseWait(snapshot(COMMITTING), NOW);
    expect(w).toEqual({ generation: 1, deadline: NOW.getTime() + COMMIT_WAIT_MS, dated: false });
  });
});

describe("isUnanswered", () => {
  it("holds while this generation's commit has no answer", () => {
    const w = waitOn();
    expect(isUnanswered(snapshot(COMMITTING, { generation: 2, commitUntil: UNTIL }), w)).toBe(true);
    // Between a new pause's spec write and its Committing write: the phase is the last generation's.
    const leftOver = snapshot(COMMITTED, { generation: 2, observedGeneration: 1, commitUntil: UNTIL });
    expect(isUnanswered(leftOver, w)).toBe(true);
  });

  it("ends with an answer, another generation, a deletion or no snapshot", () => {
    const w = waitOn();
    expect(isUnanswered(snapshot(COMMITTED, { generation: 2 }), w)).toBe(false);
    expect(isUnanswered(snapshot(FAILED, { generation: 2 }), w)).toBe(false);
    expect(isUnanswered(snapshot(COMMITTING, { generation: 3 }), w)).toBe(false);
    expect(isUnanswered(snapshot(COMMITTING, { generation: 2, deleting: true }), w)).toBe(false);
    expect(isUnanswered(undefined, w)).toBe(false);
  });
});

describe("pauseWaitStep", () => {
  const w = waitOn();
  const mine = (phase: (typeof SNAPSHOT_PHASE)[keyof typeof SNAPSHOT_PHASE] | undefined, more = {}) =>
    snapshot(phase, { generation: 2, commitUntil: UNTIL, ...more });

  it.each([
    ["gone", undefined, NOW, "undone"],
    ["being deleted", mine(PAUSED, { deleting: true }), NOW, "undone"],
    [
      "replaced by a newer pause",
      snapshot(COMMITTING, { generation: 3, commitUntil: UNTIL }),
      NOW,
      "abandoned",
    ],
    ["back at Resumed (undone by another step)", mine(RESUMED), NOW, "abandoned"],
    ["failed", mine(FAILED), NOW, "failed"],
    ["committed", mine(COMMITTED), NOW, "complete"],
    ["completed by another step", mine(PAUSED), NOW, "complete"],
    ["completed and being resumed", mine(RESUMING), NOW, "done"],
    ["unanswered before the deadline", mine(COMMITTING), NOW, "wait"],
    ["unanswered past the deadline", mine(COMMITTING), LATER, "abandon"],
    [
      "committed, seen after the deadline (completePause tells a late commit)",
      mine(COMMITTED),
      LATER,
      "complete",
    ],
  ] as const)("%s → %s", (_, s, now, kind) => {
    expect(pauseWaitStep(s, w, now).kind).toBe(kind);
  });

  it("says why a commit failed, in the agent's words", () => {
    const failed = mine(FAILED);
    failed.status = { ...failed.status, message: "registry.test: no answer within 30000 ms" };
    expect(pauseWaitStep(failed, w, NOW)).toMatchObject({
      kind: "failed",
      why: "registry.test: no answer within 30000 ms",
    });
  });

  it("holds a snapshot without its own deadline to the caller's default wait", () => {
    const undated = pauseWait(snapshot(COMMITTING), NOW);
    expect(pauseWaitStep(snapshot(COMMITTING), undated, new Date(NOW.getTime() + 1000)).kind).toBe("wait");
    const after = new Date(NOW.getTime() + COMMIT_WAIT_MS);
    expect(pauseWaitStep(snapshot(COMMITTING), undated, after).kind).toBe("abandon");
  });
});
