import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { InplaceUpdateState } from "../../lib/crd/annotations.ts";
import {
  INPLACE_UPDATE_STATE_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  type SandboxPhase,
} from "../../lib/crd/keys.ts";
import { podPhaseDuration, podPhaseSince } from "../../lib/lifecycle/phase-since.ts";

const CREATED = "2026-05-10T10:00:00Z";
const UPDATED = "2026-05-10T11:59:00Z";
const NOW = new Date("2026-05-10T12:00:00Z");

function pod(phase: SandboxPhase | undefined, state?: Partial<InplaceUpdateState> | string): V1Pod {
  const raw =
    typeof state === "string" ? state : state && JSON.stringify({ updateTimestamp: UPDATED, ...state });
  return {
    metadata: {
      name: "p",
      creationTimestamp: new Date(CREATED),
      labels: phase ? { [SANDBOX_PHASE_LABEL]: phase } : {},
      annotations: raw ? { [INPLACE_UPDATE_STATE_ANNOTATION]: raw } : {},
    },
  };
}

describe("podPhaseSince", () => {
  it.each<[string, V1Pod, SandboxPhase | undefined, string | undefined]>([
    ["starting: the starting state's timestamp", pod("starting", { phase: "starting" }), "starting", UPDATED],
    ["stopping: the stopping state's timestamp", pod("stopping", { phase: "stopping" }), "stopping", UPDATED],
    [
      "running: the completed state's timestamp",
      pod("running", { phase: "completed", targetPodPhase: "running" }),
      "running",
      UPDATED,
    ],
    [
      "idle: the completed state's timestamp",
      pod("idle", { phase: "completed", targetPodPhase: "idle" }),
      "idle",
      UPDATED,
    ],
    [
      "completed without targetPodPhase counts for any phase",
      pod("idle", { phase: "completed" }),
      "idle",
      UPDATED,
    ],
    ["fresh idle pod: creationTimestamp", pod("idle"), "idle", CREATED],
    [
      "running with a starting state: creationTimestamp",
      pod("running", { phase: "starting" }),
      "running",
      CREATED,
    ],
    [
      "idle with a completed-towards-running state: creationTimestamp",
      pod("idle", { phase: "completed", targetPodPhase: "running" }),
      "idle",
      CREATED,
    ],
    [
      "starting with a completed state: creationTimestamp",
      pod("starting", { phase: "completed" }),
      "starting",
      CREATED,
    ],
    ["failed: creationTimestamp", pod("failed", { phase: "starting" }), "failed", CREATED],
    ["unreadable state: creationTimestamp", pod("starting", "{oops"), "starting", CREATED],
    [
      "Go's null updateTimestamp: creationTimestamp",
      pod("starting", { phase: "starting", updateTimestamp: null }),
      "starting",
      CREATED,
    ],
    ["phase omitted: the current phase", pod("starting", { phase: "starting" }), undefined, UPDATED],
    ["not in the requested phase", pod("running", { phase: "completed" }), "idle", undefined],
    ["no phase label", pod(undefined), "idle", undefined],
    ["no phase label, phase omitted", pod(undefined), undefined, undefined],
  ])("%s", (_name, p, phase, expected) => {
    expect(podPhaseSince(p, phase)?.toISOString()).toBe(expected && new Date(expected).toISOString());
  });

  it("accepts a creationTimestamp string (raw JSON pods)", () => {
    const p = pod("idle");
    (p.metadata as Record<string, unknown>).creationTimestamp = CREATED;
    expect(podPhaseSince(p)?.toISOString()).toBe(new Date(CREATED).toISOString());
  });

  it("no creationTimestamp and no state: undefined", () => {
    expect(podPhaseSince({ metadata: { labels: { [SANDBOX_PHASE_LABEL]: "idle" } } })).toBeUndefined();
  });
});

describe("podPhaseDuration", () => {
  it("milliseconds since the phase began", () => {
    expect(podPhaseDuration(pod("starting", { phase: "starting" }), "starting", NOW)).toBe(60_000);
    expect(podPhaseDuration(pod("idle"), undefined, NOW)).toBe(2 * 3600_000);
  });

  it("undefined when not in the phase", () => {
    expect(podPhaseDuration(pod("running", { phase: "completed" }), "starting", NOW)).toBeUndefined();
  });

  it("never negative under clock skew", () => {
    expect(
      podPhaseDuration(pod("starting", { phase: "starting" }), "starting", new Date("2026-05-10T11:00:00Z")),
    ).toBe(0);
  });
});
