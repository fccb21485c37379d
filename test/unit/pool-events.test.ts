import { describe, expect, it } from "vitest";
import type { SandboxPoolPhase, SandboxPoolStatus } from "../../lib/crd/sandbox-pool.ts";
import { phaseTransitionEvent } from "../../lib/pool/pool-events.ts";

describe("phaseTransitionEvent", () => {
  it.each<
    [SandboxPoolPhase | undefined, SandboxPoolPhase | undefined, string | undefined, string | undefined]
  >([
    [undefined, "ScalingUp", "Normal", "ScalingUp"],
    ["Ready", "ScalingUp", "Normal", "ScalingUp"],
    ["Ready", "ScalingDown", "Normal", "ScalingDown"],
    ["ScalingUp", "Ready", "Normal", "PoolReady"],
    ["Degraded", "Ready", "Normal", "PoolRecovered"],
    ["Ready", "Degraded", "Warning", "Degraded"],
    [undefined, "Degraded", "Warning", "Degraded"],
    ["Ready", "Ready", undefined, undefined],
    ["Degraded", "Degraded", undefined, undefined],
    ["Ready", "Pending", undefined, undefined],
    ["Ready", "Terminating", undefined, undefined],
    ["Ready", undefined, undefined, undefined],
  ])("%s → %s: %s %s", (prev, next, type, reason) => {
    const event = phaseTransitionEvent(prev, next);
    expect(event?.type).toBe(type);
    expect(event?.reason).toBe(reason);
    if (event) {
      expect(event.action).not.toBe("");
      expect(event.note.length).toBeGreaterThan(0);
      expect(event.note.length).toBeLessThanOrEqual(1024);
    }
  });

  it("puts counts into the note when given the status", () => {
    const status: SandboxPoolStatus = {
      idleReplicas: 1,
      runningReplicas: 2,
      failedReplicas: 1,
      unavailableIdleReplicas: 0,
    };
    expect(phaseTransitionEvent("Ready", "Degraded", { replicas: 4, status })?.note).toBe(
      "Pool degraded: 1 failed pod(s), 0 idle pod(s) not ready",
    );
    expect(phaseTransitionEvent("Ready", "ScalingUp", { replicas: 6, status })?.note).toBe(
      "Scaling up pool from 4 to 6 replicas",
    );
    expect(phaseTransitionEvent("Degraded", "Ready", { replicas: 4, status })).toEqual({
      type: "Normal",
      reason: "PoolRecovered",
      action: "Recover",
      note: "Pool reached desired state: 4 replicas, 1 idle",
    });
  });
});
