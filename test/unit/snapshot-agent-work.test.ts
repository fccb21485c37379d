import { describe, expect, it } from "vitest";
import type { SandboxSnapshot, SandboxSnapshotStatus } from "../../lib/crd/sandbox-snapshot.ts";
import { SNAPSHOT_FINALIZER } from "../../lib/crd/sandbox-snapshot.ts";
import {
  commitBudgetMs,
  commitFailure,
  commitStillWanted,
  committedStatus,
  failedStatus,
  imageCreated,
  leftBehind,
  mustEmptyRepositories,
  snapshotRepositories,
  snapshotWork,
  unrecorded,
  withoutFinalizer,
  withoutStale,
} from "../../lib/snapshots/agent-work.ts";

// What the node's snapshot agent does for one SandboxSnapshot, decided from the object alone.

const REPO = "registry.agentbox.test/agentbox-snapshots/ns/sb1/sandbox";
const A = "a".repeat(64);
const Z = "f".repeat(64);

function snapshot(
  generation: number,
  status?: SandboxSnapshotStatus,
  meta: { deletionTimestamp?: string; finalizers?: string[] } = {},
): SandboxSnapshot {
  return {
    metadata: { name: "sb1", namespace: "ns", generation, resourceVersion: "7", ...meta },
    spec: {
      sandboxId: "sb1",
      pool: "p",
      source: {
        node: "real-node-0",
        pod: "p-1",
        podUID: "uid",
        containers: [{ name: "sandbox", containerID: "containerd://abc", image: "img@sha256:1" }],
      },
      claim: { containerImages: {}, team: "t" },
    },
    ...(status ? { status } : {}),
  };
}

describe("snapshotWork", () => {
  it("commits a new snapshot (no phase) and a Committing one whose generation is not answered", () => {
    expect(snapshotWork(snapshot(1))).toEqual({ kind: "commit", generation: 1 });
    expect(snapshotWork(snapshot(3, { phase: "Committing", observedGeneration: 2 }))).toEqual({
      kind: "commit",
      generation: 3,
    });
  });

  it("never commits a generation already answered, committed or failed", () => {
    expect(snapshotWork(snapshot(2, { phase: "Committing", observedGeneration: 2 }))).toEqual({
      kind: "none",
    });
    expect(snapshotWork(snapshot(2, { phase: "Committed", observedGeneration: 2 }))).toEqual({
      kind: "none",
    });
    expect(snapshotWork(snapshot(2, { phase: "Failed", observedGeneration: 2 }))).toEqual({ kind: "none" });
    // Another phase than Committing is the host's: the agent does not commit under it.
    expect(snapshotWork(snapshot(3, { phase: "Paused", observedGeneration: 2 }))).toEqual({ kind: "none" });
  });

  it("deletes stale images only once the sandbox is paused (or later), never while committing", () => {
    const staleImages = { "sandbox:g1": `${REPO}:g1@sha256:${A}` };
    for (const phase of ["Paused", "Resuming", "Resumed"] as const)
      expect(snapshotWork(snapshot(2, { phase, observedGeneration: 2, staleImages }))).toEqual({
        kind: "remove-stale",
        images: staleImages,
        foreign: [],
      });
    expect(snapshotWork(snapshot(2, { phase: "Committed", observedGeneration: 2, staleImages }))).toEqual({
      kind: "none",
    });
    expect(snapshotWork(snapshot(2, { phase: "Paused", observedGeneration: 2, staleImages: {} }))).toEqual({
      kind: "none",
    });
  });

  it("finalizes a deleted snapshot that holds the finalizer: every image, current and stale, once", () => {
    const s = snapshot(
      2,
      {
        phase: "Committing",
        observedGeneration: 1,
        images: { sandbox: `${REPO}:g1@sha256:${A}` },
        staleImages: { "sandbox:g1": `${REPO}:g1@sha256:${A}`, "sandbox:g0": `${REPO}:g0@sha256:${Z}` },
      },
      { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: ["other", SNAPSHOT_FINALIZER] },
    );
    expect(snapshotWork(s)).toEqual({
      kind: "finalize",
      images: [`${REPO}:g1@sha256:${A}`, `${REPO}:g0@sha256:${Z}`],
    });
    // Without the finalizer the agent has nothing left to do for it (it may not commit either).
    const gone = snapshot(1, undefined, { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: ["other"] });
    expect(snapshotWork(gone)).toEqual({ kind: "none" });
  });
  it("keeps a deleted snapshot while the history lacks what it holds the facts of: its end, its events", () => {
    const killed = (recorded: NonNullable<SandboxSnapshotStatus["recorded"]>, carried = false) =>
      snapshot(
        1,
        {
          phase: "Paused",
          observedGeneration: 1,
          images: { sandbox: `${REPO}:g1@sha256:${A}` },
          pausedAt: "2026-12-02T09:00:00Z",
          recorded,
          ...(carried
            ? {
                pendingEvents: [
                  { kind: "resumed" as const, n: 1, at: "2026-12-02T08:00:00Z", podName: "p-0" },
                ],
              }
            : {}),
        },
        { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: [SNAPSHOT_FINALIZER] },
      );
    const finalize = { kind: "finalize", images: [`${REPO}:g1@sha256:${A}`] };
    // Killed while paused: its terminal record not yet written, then its pause's event, then a carried one.
    expect(snapshotWork(killed({ paused: 1 }))).toEqual({ kind: "none" });
    expect(snapshotWork(killed({ ended: true }))).toEqual({ kind: "none" });
    expect(snapshotWork(killed({ paused: 1, ended: true }, true))).toEqual({ kind: "none" });
    expect(snapshotWork(killed({ paused: 1, ended: true }))).toEqual(finalize);
  });

  it("never deletes an image of another repository: a stale entry is forgotten, a deleted snapshot's skipped", () => {
    const other = `registry.agentbox.test/agentbox-snapshots/ns/other-sandbox/sandbox:g1@sha256:${A}`;
    const base = `registry.agentbox.test/pools/python@sha256:${A}`;
    const unreadable = `${REPO}:g0@sha256:not-a-digest`;
    const staleImages = {
      "sandbox:g1": `${REPO}:g1@sha256:${A}`,
      "x:1": other,
      "y:1": base,
      "z:1": unreadable,
    };
    expect(snapshotWork(snapshot(2, { phase: "Paused", observedGeneration: 2, staleImages }))).toEqual({
      kind: "remove-stale",
      images: { "sandbox:g1": `${REPO}:g1@sha256:${A}` },
      foreign: ["x:1", "y:1", "z:1"],
    });
    const deleted = snapshot(
      2,
      {
        phase: "Paused",
        observedGeneration: 2,
        images: { sandbox: base },
        staleImages,
        recorded: { paused: 1, ended: true },
      },
      { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: [SNAPSHOT_FINALIZER] },
    );
    expect(snapshotWork(deleted)).toEqual({ kind: "finalize", images: [`${REPO}:g1@sha256:${A}`] });
  });
});

describe("snapshotRepositories", () => {
  const REGISTRY = "registry.agentbox.test";

  it("names one repository per container the source names or the status records, sorted, once", () => {
    const s = snapshot(3, {
      phase: "Paused",
      images: { sandbox: `${REPO}:g3@sha256:c`, side: `${REPO.replace(/sandbox$/, "side")}:g3@sha256:d` },
      staleImages: { "old:g1": `${REPO.replace(/sandbox$/, "old")}:g1@sha256:a` },
    });
    expect(snapshotRepositories(s, REGISTRY)).toEqual([
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/old",
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/sandbox",
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/side",
    ]);
    // A snapshot that never committed (the agent died before its status write) still has its source's.
    expect(snapshotRepositories(snapshot(1), REGISTRY)).toEqual([REPO]);
  });

  it("adds this sandbox's repositories under another registry name, never another sandbox's", () => {
    const s = snapshot(2, {
      phase: "Paused",
      images: { sandbox: `127.0.0.1:5000/agentbox-snapshots/ns/sb1/sandbox:g2@sha256:${"b".repeat(64)}` },
      staleImages: {
        "sandbox:g1": "registry.agentbox.test/agentbox-snapshots/ns/other-sandbox/sandbox:g1@sha256:a",
        "x:g1": "registry.agentbox.test/agentbox/sandbox-a:1",
        "y:g1": "registry.agentbox.test/agentbox-snapshots/ns/sb1/y/deeper:g1",
        "Bad Name:g1": "not a reference",
      },
    });
    expect(snapshotRepositories(s, REGISTRY)).toEqual([
      "127.0.0.1:5000/agentbox-snapshots/ns/sb1/sandbox",
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/sandbox",
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/x",
      "registry.agentbox.test/agentbox-snapshots/ns/sb1/y",
    ]);
  });
});

describe("mustEmptyRepositories", () => {
  it("holds every deleted snapshot to an emptied repository but a failed one that records no image", () => {
    const images = { sandbox: `${REPO}:g1@sha256:a` };
    // A commit possibly pushed and never recorded (its agent died), or images known to be there.
    expect(mustEmptyRepositories(snapshot(1))).toBe(true);
    expect(mustEmptyRepositories(snapshot(2, { phase: "Committing", observedGeneration: 1, images }))).toBe(
      true,
    );
    for (const phase of ["Committed", "Paused", "Resuming", "Resumed"] as const)
      expect(mustEmptyRepositories(snapshot(1, { phase, observedGeneration: 1, images })), phase).toBe(true);
    expect(mustEmptyRepositories(snapshot(2, { phase: "Failed", observedGeneration: 2, images }))).toBe(true);
    expect(
      mustEmptyRepositories(
        snapshot(3, { phase: "Failed", observedGeneration: 3, staleImages: { "sandbox:g1": "x" } }),
      ),
    ).toBe(true);
    // Its failed commit removed what it pushed; a registry outage must not hold the object.
    expect(
      mustEmptyRepositories(snapshot(1, { phase: "Failed", observedGeneration: 1, message: "down" })),
    ).toBe(false);
  });
});

describe("imageCreated", () => {
  it("is the object's creationTimestamp, whatever its generation or status", () => {
    const s = snapshot(4, { phase: "Committing", observedGeneration: 3 });
    const created = { ...s, metadata: { ...s.metadata, creationTimestamp: "2026-12-01T08:00:00Z" } };
    expect(imageCreated(created)).toBe("2026-12-01T08:00:00Z");
    expect(imageCreated({ ...created, status: { phase: "Paused" } })).toBe("2026-12-01T08:00:00Z");
    expect(imageCreated(snapshot(1))).toBe("1970-01-01T00:00:00Z");
  });
});

describe("unrecorded", () => {
  it("keeps back the manifests the object records (by repository and digest), under any tag", () => {
    const s = snapshot(2, {
      phase: "Committed",
      observedGeneration: 2,
      images: { sandbox: `${REPO}:g2@sha256:${"b".repeat(64)}` },
      staleImages: { "sandbox:g1": `${REPO}:g1@sha256:${"a".repeat(64)}` },
    });
    const pushed = {
      sandbox: `${REPO}:g2@sha256:${"b".repeat(64)}`,
      side: `${REPO}-side:g2@sha256:${"b".repeat(64)}`,
      other: `${REPO}:g2@sha256:${"c".repeat(64)}`,
      stale: `${REPO}@sha256:${"a".repeat(64)}`,
    };
    expect(unrecorded(s, pushed)).toEqual({ side: pushed.side, other: pushed.other });
    expect(unrecorded(undefined, pushed)).toEqual(pushed);
  });
});

describe("leftBehind", () => {
  const h = (c: string) => `sha256:${c.repeat(64)}`;
  const committed = {
    sandbox: { image: `${REPO}:g2@${h("b")}`, bytes: 1, replaced: `${REPO}:g2@${h("a")}` },
    side: { image: `${REPO}-side:g2@${h("c")}`, bytes: 1 },
  };

  it("is what a recorded commit re-tagged: an earlier attempt's manifests, never what it pushed", () => {
    const written = snapshot(2, {
      phase: "Committed",
      observedGeneration: 2,
      images: { sandbox: committed.sandbox.image, side: committed.side.image },
    });
    expect(leftBehind(written, committed, false)).toEqual({ "sandbox (replaced)": `${REPO}:g2@${h("a")}` });
  });

  it("is everything of a commit nobody records, less what the object does record", () => {
    expect(leftBehind(undefined, committed, true)).toEqual({
      sandbox: committed.sandbox.image,
      "sandbox (replaced)": `${REPO}:g2@${h("a")}`,
      side: committed.side.image,
    });
    // Another agent's commit of the same generation recorded the same manifest: it stays.
    const other = snapshot(2, {
      phase: "Committed",
      observedGeneration: 2,
      images: { side: committed.side.image },
    });
    expect(leftBehind(other, committed, true)).toEqual({
      sandbox: committed.sandbox.image,
      "sandbox (replaced)": `${REPO}:g2@${h("a")}`,
    });
  });
});

describe("commitStillWanted", () => {
  it("keeps a result for the same unanswered generation, not for a newer, answered or deleted one", () => {
    expect(commitStillWanted(snapshot(2, { phase: "Committing", observedGeneration: 1 }), 2)).toBe(true);
    expect(commitStillWanted(snapshot(3, { phase: "Committing", observedGeneration: 1 }), 2)).toBe(false);
    expect(commitStillWanted(snapshot(2, { phase: "Committed", observedGeneration: 2 }), 2)).toBe(false);
    expect(commitStillWanted(snapshot(2, undefined, { deletionTimestamp: "2026-12-02T10:00:00Z" }), 2)).toBe(
      false,
    );
  });
});

describe("committedStatus", () => {
  const now = new Date("2026-12-02T10:33:50.000Z");

  it("records the images, generation, size and time, and keeps the host's fields", () => {
    const s = snapshot(1, { phase: "Committing", resumes: 0, message: "old failure" });
    const status = committedStatus(
      s,
      1,
      {
        sandbox: { image: `${REPO}:g1@sha256:a`, bytes: 100 },
        side: { image: `${REPO}-side:g1@sha256:b`, bytes: 20 },
      },
      now,
    );
    expect(status).toEqual({
      phase: "Committed",
      resumes: 0,
      observedGeneration: 1,
      images: { sandbox: `${REPO}:g1@sha256:a`, side: `${REPO}-side:g1@sha256:b` },
      bytes: 120,
      committedAt: "2026-12-02T10:33:50.000Z",
    });
  });

  it("moves the images it replaces to staleImages, keeping earlier stale ones not yet deleted", () => {
    const s = snapshot(3, {
      phase: "Committing",
      observedGeneration: 2,
      images: { sandbox: `${REPO}:g2@sha256:b` },
      staleImages: { "sandbox:g1": `${REPO}:g1@sha256:a` },
    });
    const status = committedStatus(s, 3, { sandbox: { image: `${REPO}:g3@sha256:c`, bytes: 5 } }, now);
    expect(status.images).toEqual({ sandbox: `${REPO}:g3@sha256:c` });
    expect(status.staleImages).toEqual({
      "sandbox:g1": `${REPO}:g1@sha256:a`,
      "sandbox:g2": `${REPO}:g2@sha256:b`,
    });
  });

  it("never lists an image that is still current as stale", () => {
    const same = `${REPO}:g2@sha256:b`;
    const s = snapshot(3, { phase: "Committing", observedGeneration: 2, images: { sandbox: same } });
    expect(committedStatus(s, 3, { sandbox: { image: same, bytes: 0 } }, now).staleImages).toBeUndefined();
  });
});

describe("failedStatus", () => {
  it("says why and which generation, and keeps the earlier images", () => {
    const images = { sandbox: `${REPO}:g1@sha256:a` };
    const s = snapshot(2, { phase: "Committing", observedGeneration: 1, images });
    expect(failedStatus(s, 2, "registry down")).toEqual({
      phase: "Failed",
      observedGeneration: 2,
      images,
      message: "registry down",
    });
  });
});

describe("withoutStale and withoutFinalizer", () => {
  it("forgets only the stale images deleted, and drops the field when none is left", () => {
    const s = snapshot(2, {
      phase: "Paused",
      staleImages: { "sandbox:g1": "a", "sandbox:g0": "b" },
    });
    expect(withoutStale(s, ["sandbox:g1"])).toEqual({ phase: "Paused", staleImages: { "sandbox:g0": "b" } });
    expect(withoutStale(s, ["sandbox:g1", "sandbox:g0"])).toEqual({ phase: "Paused" });
  });

  it("removes only the agent's finalizer", () => {
    const s = snapshot(1, undefined, { finalizers: ["a", SNAPSHOT_FINALIZER, "b"] });
    expect(withoutFinalizer(s).metadata?.finalizers).toEqual(["a", "b"]);
    expect(withoutFinalizer(s).metadata?.resourceVersion).toBe("7");
  });
});

describe("commitBudgetMs", () => {
  const now = new Date("2026-12-02T10:00:00Z");
  const due = (commitUntil?: string) => {
    const s = snapshot(1);
    if (commitUntil) s.spec.source.commitUntil = commitUntil;
    return s;
  };

  it("is the limit for a snapshot without a deadline, or with one further off", () => {
    expect(commitBudgetMs(due(), now, 600_000)).toBe(600_000);
    expect(commitBudgetMs(due("2026-12-02T11:00:00Z"), now, 600_000)).toBe(600_000);
  });

  it("is what is left of the pause's deadline, and nothing once it passed", () => {
    expect(commitBudgetMs(due("2026-12-02T10:00:50Z"), now, 600_000)).toBe(50_000);
    expect(commitBudgetMs(due("2026-12-02T10:00:00Z"), now, 600_000)).toBe(0);
    expect(commitBudgetMs(due("2026-12-02T09:59:00Z"), now, 600_000)).toBeLessThan(0);
  });
});

describe("commitFailure", () => {
  const until = "2026-12-02T10:00:50Z";
  const failed = (budgetMs: number, aborted: boolean) =>
    commitFailure({ budgetMs, limitMs: 600_000, aborted, error: "registry down", commitUntil: until });

  it("is overdue when never begun past the deadline, or cut short by it (its budget below the limit)", () => {
    const overdue = { overdue: true, why: `not done by the pause's deadline (${until})` };
    expect(failed(0, false)).toEqual(overdue);
    expect(failed(-5, false)).toEqual(overdue);
    expect(failed(50_000, true)).toEqual(overdue);
  });

  it("is the limit when the limit was the bound, else the committer's error", () => {
    expect(failed(600_000, true)).toEqual({ overdue: false, why: "took longer than 600 s" });
    expect(failed(50_000, false)).toEqual({ overdue: false, why: "registry down" });
  });
});
