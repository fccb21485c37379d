import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { INPLACE_UPDATE_STATE_ANNOTATION } from "../../lib/crd/keys.ts";
import {
  BACKWARD_FIRST,
  BACKWARD_REACH_MS,
  backwardOutcome,
  backwardSince,
  nextReach,
} from "../../lib/logs/backward-read.ts";
import { claimCuts, ranAtClaim } from "../../lib/logs/claim-cut.ts";
import { CONTAINER_LOG_BYTES, filledLimit, pageBytes } from "../../lib/logs/container-lines.ts";
import { FollowSlots } from "../../lib/logs/follow-slots.ts";
import { FOLLOW_MAX_FAILURES, failedReads, followFailure } from "../../lib/logs/read-failures.ts";

// The bounds of the logs API: how much a page reads, how a backward page finds the lines before
// its cursor, how many follows a tenant holds, when failing reads end a follow, and where a
// container's lines start when the node's clock and the host's differ.

const CLAIM = Date.parse("2026-12-02T06:00:05Z");
const at = (ms: number) => ({ ms, ns: 0 });

describe("pageBytes and filledLimit", () => {
  it("reads 8 KiB a line of the page's limit, from 256 KiB to 4 MiB, and the whole bound when filtering", () => {
    expect(pageBytes({ limit: 1 })).toBe(256 * 1024);
    expect(pageBytes({ limit: 100 })).toBe(800 * 1024);
    expect(pageBytes({ limit: 1000 })).toBe(CONTAINER_LOG_BYTES);
    expect(pageBytes({ limit: 1, level: "warn" })).toBe(CONTAINER_LOG_BYTES);
    expect(pageBytes({ limit: 1, search: "x" })).toBe(CONTAINER_LOG_BYTES);
  });

  it("counts UTF-8 bytes as the kubelet does, without a copy", () => {
    const bytes = (s: string) => new TextEncoder().encode(s).length;
    for (const text of ["abc", "é€", "😀x", "a\ud800b", "€€€€", "x".repeat(9)]) {
      const n = bytes(text);
      expect([filledLimit(text, n), filledLimit(text, n + 1)], text).toEqual([true, false]);
    }
    // Decided by the length alone at either end.
    expect(filledLimit("abcd", 4)).toBe(true);
    expect(filledLimit("a", 4)).toBe(false);
  });
});

describe("a backward page's reads", () => {
  const cursor = CLAIM + 3_600_000;

  it("starts a minute before the cursor, never before the claim", () => {
    expect(BACKWARD_REACH_MS[BACKWARD_FIRST]).toBe(60_000);
    expect(backwardSince(cursor, BACKWARD_FIRST, CLAIM)).toBe(cursor - 60_000);
    expect(backwardSince(cursor, BACKWARD_REACH_MS.length - 1, CLAIM)).toBe(CLAIM);
    expect(backwardSince(CLAIM + 10_000, BACKWARD_FIRST, CLAIM)).toBe(CLAIM);
  });

  it("judges a read: fits, empty (no line up to the cursor), dense (filled before the cursor)", () => {
    const since = cursor - 60_000;
    expect(backwardOutcome([at(since + 1), at(cursor + 5)], true, cursor, since, CLAIM)).toBe("fits");
    expect(backwardOutcome([at(since + 1)], false, cursor, since, CLAIM)).toBe("fits");
    expect(backwardOutcome([at(cursor + 5)], false, cursor, since, CLAIM)).toBe("empty");
    expect(backwardOutcome([], false, cursor, since, CLAIM)).toBe("empty");
    // From the claim there is nothing older: an empty read is the answer.
    expect(backwardOutcome([], false, cursor, CLAIM, CLAIM)).toBe("fits");
    expect(backwardOutcome([at(since + 1), at(cursor - 1)], true, cursor, since, CLAIM)).toBe("dense");
    // Cut at the cursor's own millisecond: others of it may be missing.
    expect(backwardOutcome([at(cursor)], true, cursor, since, CLAIM)).toBe("dense");
    expect(backwardOutcome([], true, cursor, since, CLAIM)).toBe("dense");
  });

  it("widens while empty, narrows while dense, reads each window once and stops at the ends", () => {
    expect(nextReach(1, "fits", new Set([1]))).toBeUndefined();
    expect(nextReach(1, "empty", new Set([1]))).toBe(2);
    expect(nextReach(1, "dense", new Set([1]))).toBe(0);
    expect(nextReach(0, "dense", new Set([1, 0]))).toBeUndefined();
    expect(nextReach(3, "empty", new Set([1, 2, 3]))).toBe(4);
    // Dense at a minute, empty at 5 s: the lines lie between two windows.
    expect(nextReach(0, "empty", new Set([1, 0]))).toBeUndefined();
    // A quiet sandbox: wider windows until one starts at the claim (4 h reaches it an hour back).
    const tried = new Set<number>();
    const sinces: number[] = [];
    let rung: number | undefined = BACKWARD_FIRST;
    while (rung !== undefined) {
      tried.add(rung);
      const since = backwardSince(cursor, rung, CLAIM);
      sinces.push(since);
      rung = nextReach(rung, backwardOutcome([], false, cursor, since, CLAIM), tried);
    }
    expect(sinces).toEqual([cursor - 60_000, cursor - 15 * 60_000, CLAIM]);
  });
});

describe("FollowSlots", () => {
  it("lets a tenant hold `max` follows, frees a slot once however often it is released", () => {
    const slots = new FollowSlots(2);
    const a = slots.take("t/u");
    const b = slots.take("t/u");
    expect(a && b).toBeTruthy();
    expect(slots.take("t/u")).toBeUndefined();
    expect(slots.take("t/other")).toBeTruthy();
    a?.();
    a?.();
    expect(slots.count("t/u")).toBe(1);
    const c = slots.take("t/u");
    expect(c).toBeTruthy();
    expect(slots.take("t/u")).toBeUndefined();
    b?.();
    c?.();
    expect(slots.count("t/u")).toBe(0);
  });
});

describe("failed reads of a follow", () => {
  it("counts failures in a row, and names the status and nothing of the error", () => {
    let n = 0;
    for (const failed of [true, true, false, true]) n = failedReads(n, failed);
    expect(n).toBe(1);
    for (let i = 0; i < FOLLOW_MAX_FAILURES - 1; i++) n = failedReads(n, true);
    expect(n).toBe(FOLLOW_MAX_FAILURES);
    expect(followFailure(5, 403)).toBe(
      "the sandbox's container log could not be read 5 times in a row (the apiserver answered 403)",
    );
    expect(followFailure(5, undefined)).toMatch(/could not be reached\)$/);
  });
});

describe("where a container's lines start", () => {
  const pod = (state: unknown, containerID = "containerd://b"): V1Pod => ({
    metadata: { annotations: { [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify(state) } },
    status: { containerStatuses: [{ name: "sandbox", containerID } as never] },
  });
  const running = { targetPodPhase: "running", updateTimestamp: "2026-12-02T06:00:05Z" };

  it("tells from container IDs whether the run was there at the claim", () => {
    const fast = {
      ...running,
      phase: "completed",
      stableContainerStatuses: { sandbox: { containerID: "containerd://b", restartCount: 0 } },
    };
    expect(ranAtClaim(pod(fast), "sandbox")).toBe(true);
    // Restarted after the fast-path claim (a crash): a new run.
    expect(ranAtClaim(pod(fast, "containerd://c"), "sandbox")).toBe(false);
    const swapping = {
      ...running,
      phase: "starting",
      targetImages: { sandbox: "img:2" },
      lastContainerStatuses: { sandbox: { containerID: "containerd://a" } },
    };
    expect(ranAtClaim(pod(swapping, "containerd://a"), "sandbox")).toBe(true);
    expect(ranAtClaim(pod(swapping), "sandbox")).toBe(false);
    const { lastContainerStatuses: _, ...swapped } = { ...swapping, phase: "completed" };
    expect(ranAtClaim(pod(swapped), "sandbox")).toBe(false);
    expect(ranAtClaim(pod({ ...running, phase: "completed" }), "sandbox")).toBeUndefined();
    expect(ranAtClaim({ status: {} }, "sandbox")).toBeUndefined();
  });

  it("cuts a run that was there at the claim's second's end, and never a run started after it", () => {
    expect(claimCuts(CLAIM, CLAIM - 60_000, true)).toEqual({ claim: CLAIM + 1000, container: CLAIM + 1000 });
    // The node's clock 2.5 s behind: the run the claim started reads as started before it.
    expect(claimCuts(CLAIM, CLAIM - 2_500, false)).toEqual({ claim: CLAIM, container: CLAIM - 3000 });
    expect(claimCuts(CLAIM, CLAIM + 4000, false)).toEqual({ claim: CLAIM, container: CLAIM });
    // Without IDs to go by, the start decides.
    expect(claimCuts(CLAIM, CLAIM - 60_000, undefined).container).toBe(CLAIM + 1000);
    expect(claimCuts(CLAIM, CLAIM, undefined).container).toBe(CLAIM);
    expect(claimCuts(CLAIM, undefined, undefined).container).toBe(CLAIM);
  });
});
