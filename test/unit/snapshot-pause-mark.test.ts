import { describe, expect, it } from "vitest";
import { PAUSING_ANNOTATION } from "../../lib/crd/keys.ts";
import { pauseMarkOf, pauseMarkPatch } from "../../lib/snapshots/pause-mark.ts";
import { runningPod } from "../support/snapshot-fixtures.ts";

// The pause's mark on its pod: read back, and written only over the pod as it was read.

describe("pauseMarkOf", () => {
  it("reads the generation a mark names, and nothing else", () => {
    expect(pauseMarkOf(runningPod({ annotations: { [PAUSING_ANNOTATION]: "3" } }))).toBe(3);
    for (const raw of ["", "0", "-1", "1.5", "x", "9007199254740993"])
      expect(pauseMarkOf(runningPod({ annotations: { [PAUSING_ANNOTATION]: raw } }))).toBeUndefined();
    expect(pauseMarkOf(runningPod())).toBeUndefined();
    expect(pauseMarkOf(undefined)).toBeUndefined();
  });
});

describe("pauseMarkPatch", () => {
  it("tests the pod's resourceVersion first, then adds the mark", () => {
    const pod = runningPod();
    pod.metadata = { ...pod.metadata, resourceVersion: "42" };
    expect(pauseMarkPatch(pod, 2)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "42" },
      { op: "add", path: "/metadata/annotations/agentbox.navix.sh~1pausing", value: "2" },
    ]);
  });

  it("adds the annotations map to a pod that has none", () => {
    const pod = runningPod();
    pod.metadata = { ...pod.metadata, resourceVersion: "42", annotations: undefined };
    expect(pauseMarkPatch(pod, 2)[1]).toEqual({
      op: "add",
      path: "/metadata/annotations",
      value: { [PAUSING_ANNOTATION]: "2" },
    });
  });

  it("refuses a pod that was not read from the apiserver", () => {
    expect(() => pauseMarkPatch(runningPod(), 1)).toThrow(/resourceVersion/);
  });
});
