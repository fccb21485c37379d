import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { InplaceUpdateState } from "../../lib/crd/annotations.ts";
import { INPLACE_UPDATE_STATE_ANNOTATION, SANDBOX_PHASE_LABEL } from "../../lib/crd/keys.ts";
import { encodeInplaceState, readInplaceState } from "../../lib/lifecycle/inplace-state.ts";
import { sandboxPhaseOf } from "../../lib/lifecycle/phase-label.ts";

const withAnnotation = (value?: string): V1Pod => ({
  metadata: {
    name: "p",
    annotations: value === undefined ? {} : { [INPLACE_UPDATE_STATE_ANNOTATION]: value },
  },
});

const state: InplaceUpdateState = {
  phase: "starting",
  targetImages: { main: "img:2" },
  targetPodPhase: "running",
  updateTimestamp: "2026-05-10T12:00:00Z",
  lastContainerStatuses: { main: { imageID: "img@sha256:aa", containerID: "containerd://1" } },
};

describe("readInplaceState", () => {
  it("absent or empty annotation: no state, no reason", () => {
    expect(readInplaceState({})).toEqual({ state: undefined });
    expect(readInplaceState(withAnnotation())).toEqual({ state: undefined });
    expect(readInplaceState(withAnnotation(""))).toEqual({ state: undefined });
  });

  it("round-trips an encoded state", () => {
    expect(readInplaceState(withAnnotation(encodeInplaceState(state)))).toEqual({ state });
  });

  it("reads what agentbox's Go controller writes (null updateTimestamp, restartCount, unknown fields)", () => {
    const go =
      '{"phase":"completed","targetPodPhase":"running","updateTimestamp":null,' +
      '"stableContainerStatuses":{"main":{"containerID":"containerd://9","restartCount":2}},"future":1}';
    const read = readInplaceState(withAnnotation(go));
    expect(read.reason).toBeUndefined();
    expect(read.state?.phase).toBe("completed");
    expect(read.state?.stableContainerStatuses?.main).toEqual({
      containerID: "containerd://9",
      restartCount: 2,
    });
    expect(read.state).toHaveProperty("future", 1);
  });

  it.each([
    ["malformed JSON", "{not json", /invalid JSON/],
    ["not an object", "[1,2]", /inplace-update-state/],
    ["unknown phase", '{"phase":"sleeping"}', /phase/],
    ["bad timestamp", '{"phase":"starting","updateTimestamp":"yesterday"}', /updateTimestamp/],
  ])("%s: no state, a reason, no throw", (_name, raw, reason) => {
    const read = readInplaceState(withAnnotation(raw));
    expect(read.state).toBeUndefined();
    expect(read.reason).toMatch(reason);
  });

  it("encodes without undefined fields", () => {
    expect(JSON.parse(encodeInplaceState({ phase: "completed", targetImage: undefined }))).toEqual({
      phase: "completed",
    });
  });
});

describe("sandboxPhaseOf", () => {
  it.each([
    ["idle", "idle"],
    ["starting", "starting"],
    ["running", "running"],
    ["stopping", "stopping"],
    ["failed", "failed"],
    ["Running", undefined],
    ["", undefined],
    [undefined, undefined],
  ])("label %j → %j", (label, phase) => {
    const pod: V1Pod = { metadata: { labels: label === undefined ? {} : { [SANDBOX_PHASE_LABEL]: label } } };
    expect(sandboxPhaseOf(pod)).toBe(phase);
  });

  it("pod without metadata", () => {
    expect(sandboxPhaseOf({})).toBeUndefined();
  });
});
