import { describe, expect, it } from "vitest";
import type { SandboxSnapshot, SandboxSnapshotStatus } from "../../lib/crd/sandbox-snapshot.ts";
import { SNAPSHOT_FINALIZER } from "../../lib/crd/sandbox-snapshot.ts";
import {
  commitStillWanted,
  committedStatus,
  failedStatus,
  snapshotWork,
  staleKey,
  withoutFinalizer,
  withoutStale,
} from "../../lib/snapshots/agent-work.ts";

// What the node's snapshot agent does for one SandboxSnapshot, decided from the object alone.

const REPO = "registry.agentbox.test/agentbox-snapshots/ns/sb1/sandbox";

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
    const staleImages = { "sandbox:g1": `${REPO}:g1@sha256:a` };
    for (const phase of ["Paused", "Resuming", "Resumed"] as const)
      expect(snapshotWork(snapshot(2, { phase, observedGeneration: 2, staleImages }))).toEqual({
        kind: "remove-stale",
        images: staleImages,
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
        images: { sandbox: `${REPO}:g1@sha256:a` },
        staleImages: { "sandbox:g1": `${REPO}:g1@sha256:a`, "sandbox:g0": `${REPO}:g0@sha256:z` },
      },
      { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: ["other", SNAPSHOT_FINALIZER] },
    );
    expect(snapshotWork(s)).toEqual({
      kind: "finalize",
      images: [`${REPO}:g1@sha256:a`, `${REPO}:g0@sha256:z`],
    });
    // Without the finalizer the agent has nothing left to do for it (it may not commit either).
    const gone = snapshot(1, undefined, { deletionTimestamp: "2026-12-02T10:00:00Z", finalizers: ["other"] });
    expect(snapshotWork(gone)).toEqual({ kind: "none" });
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

describe("staleKey", () => {
  it("is the container and the image's tag, ignoring a registry port and the digest", () => {
    expect(staleKey("sandbox", `${REPO}:g4@sha256:abc`)).toBe("sandbox:g4");
    expect(staleKey("c", "127.0.0.1:5000/a/b:g2")).toBe("c:g2");
    expect(staleKey("c", "127.0.0.1:5000/a/b@sha256:abc")).toBe("c:127.0.0.1:5000/a/b@sha256:abc");
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
