import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  CLAIMED_AT_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  SANDBOX_ID_LABEL,
} from "../../lib/crd/keys.ts";
import { nodeCapacity, sandboxCapacity } from "../../lib/usage/capacity.ts";
import type { ContainerUsage } from "../../lib/usage/sample.ts";
import { sandboxFigures, sandboxRunsSince } from "../../lib/usage/sandbox-runs.ts";
import { cpuCores, runKey, sampleTime, sandboxSample } from "../../lib/usage/series.ts";

const GIB = 1024 ** 3;
const CLAIMED = "2026-12-02T06:00:00.700Z";

/** pod is a claimed pod of sandbox "sbx-1" with one container "sandbox" (and `extra`). */
function pod(o: {
  claimedAt?: string;
  limits?: Record<string, string>;
  requests?: Record<string, string>;
  state?: unknown;
  status?: V1Pod["status"];
  sidecar?: boolean;
}): V1Pod {
  return {
    metadata: {
      name: "p-1",
      namespace: "ns",
      uid: "uid-1",
      labels: { [SANDBOX_ID_LABEL]: "sbx-1" },
      annotations: {
        ...(o.claimedAt === undefined ? {} : { [CLAIMED_AT_ANNOTATION]: o.claimedAt }),
        ...(o.state ? { [INPLACE_UPDATE_STATE_ANNOTATION]: JSON.stringify(o.state) } : {}),
      },
    },
    spec: {
      nodeName: "n1",
      containers: [
        { name: "sandbox", image: "a", resources: { limits: o.limits ?? {}, requests: o.requests ?? {} } },
        ...(o.sidecar
          ? [{ name: "sidecar", image: "s", resources: { limits: { cpu: "1", memory: "1Gi" } } }]
          : []),
      ],
    },
    ...(o.status ? { status: o.status } : {}),
  };
}

/** fig is one container's figures on node n1. */
const fig = (o: Partial<ContainerUsage>): ContainerUsage => ({
  namespace: "ns",
  pod: "p-1",
  podUid: "uid-1",
  container: "sandbox",
  startTime: "2026-12-02T06:00:02Z",
  at: "2026-12-02T06:00:10Z",
  ...o,
});

describe("sandboxRunsSince and sandboxFigures: only the sandbox's own runs", () => {
  it("counts a container's run from the claim (to the second, as the kubelet writes start times)", () => {
    const p = pod({ claimedAt: CLAIMED });
    expect(sandboxRunsSince(p)).toEqual(new Map([["sandbox", Date.parse("2026-12-02T06:00:00Z")]]));
    const mine = fig({ startTime: "2026-12-02T06:00:00Z" });
    const previous = fig({ startTime: "2026-12-02T05:59:59Z" });
    expect(sandboxFigures(p, [mine, previous])).toEqual([mine]);
  });

  it("never shows a run that cannot be placed, another pod's, a pod of the same name's earlier uid, or an unclaimed pod's", () => {
    const p = pod({ claimedAt: CLAIMED });
    const kept = fig({});
    const figures = [
      kept,
      fig({ startTime: undefined }),
      fig({ pod: "p-2" }),
      fig({ namespace: "other" }),
      fig({ podUid: "uid-0" }),
      fig({ container: "not-in-spec" }),
    ];
    expect(sandboxFigures(p, figures)).toEqual([kept]);
    // A source that names no uid (resource metrics) is matched by namespace and name.
    const noUid = fig({ podUid: undefined });
    expect(sandboxFigures(p, [noUid])).toEqual([noUid]);
    expect(sandboxRunsSince(pod({}))).toBeUndefined();
    expect(sandboxFigures(pod({}), [kept])).toEqual([]);
  });

  it("counts a container the claim kept as it ran (same images) from the end of the run before it", () => {
    const state = {
      phase: "completed",
      targetPodPhase: "running",
      stableContainerStatuses: { sandbox: { containerID: "containerd://kept", restartCount: 1 } },
    };
    const status = (containerID: string): V1Pod["status"] => ({
      containerStatuses: [
        {
          name: "sandbox",
          containerID,
          image: "a",
          imageID: "a@sha256:1",
          ready: true,
          restartCount: 1,
          state: { running: { startedAt: new Date("2026-12-02T05:58:00Z") } },
          lastState: { terminated: { exitCode: 0, finishedAt: new Date("2026-12-02T05:57:59.400Z") } },
        },
      ],
    });
    const kept = pod({ claimedAt: CLAIMED, state, status: status("containerd://kept") });
    expect(sandboxRunsSince(kept)?.get("sandbox")).toBe(Date.parse("2026-12-02T05:57:59Z"));
    const fresh = fig({ startTime: "2026-12-02T05:57:59Z" });
    const tenantBefore = fig({ startTime: "2026-12-02T05:50:00Z" });
    expect(sandboxFigures(kept, [fresh, tenantBefore])).toEqual([fresh]);
    // Once that container is replaced (a restart), its runs count from the claim again.
    const restarted = pod({ claimedAt: CLAIMED, state, status: status("containerd://other") });
    expect(sandboxRunsSince(restarted)?.get("sandbox")).toBe(Date.parse("2026-12-02T06:00:00Z"));
  });
});

describe("capacity", () => {
  const node = {
    status: { allocatable: { cpu: "3800m", memory: "15Gi", "ephemeral-storage": "100Gi" } },
  };
  it("reads a node's allocatable resources", () => {
    expect(nodeCapacity(node)).toEqual({ cpuCores: 3.8, memoryBytes: 15 * GIB, diskBytes: 100 * GIB });
    expect(nodeCapacity(undefined)).toEqual({});
    expect(nodeCapacity({ status: { allocatable: { cpu: "lots" } } })).toEqual({});
  });

  it("takes the pod's limits (capped at the node's), else the node's, else requests", () => {
    const n = nodeCapacity(node);
    expect(
      sandboxCapacity(pod({ limits: { cpu: "1500m", memory: "2Gi", "ephemeral-storage": "1Gi" } }), n),
    ).toEqual({ cpuCores: 1.5, memoryBytes: 2 * GIB, diskBytes: GIB });
    expect(sandboxCapacity(pod({ limits: { cpu: "64" } }), n)).toEqual({
      cpuCores: 3.8,
      memoryBytes: 15 * GIB,
    });
    // A container without a limit may use the node's: the pod's total is the node's.
    expect(sandboxCapacity(pod({ limits: { cpu: "1" }, sidecar: true }), n).cpuCores).toBe(2);
    expect(sandboxCapacity(pod({ sidecar: true, limits: {} }), n).cpuCores).toBe(3.8);
    expect(sandboxCapacity(pod({ requests: { cpu: "250m", memory: "64Mi" } }), {})).toEqual({
      cpuCores: 0.25,
      memoryBytes: 64 * 1024 ** 2,
    });
  });
});

describe("sampleTime and cpuCores", () => {
  it("rounds the sample time down to the period, so hosts sampling one moment write one key", () => {
    expect(sampleTime(new Date("2026-12-02T06:00:19.999Z"), 10)).toBe("2026-12-02T06:00:10Z");
    expect(sampleTime(new Date("2026-12-02T06:00:10.001Z"), 10)).toBe("2026-12-02T06:00:10Z");
    expect(sampleTime(new Date("2026-12-02T06:00:10.999Z"), 1)).toBe("2026-12-02T06:00:10Z");
  });

  it("takes the source's rate, else the counter's change since the same run's previous read", () => {
    expect(cpuCores(fig({ cpuNanoCores: 500_000_000 }), undefined)).toBe(0.5);
    const read = fig({ cpuCoreSeconds: 13, at: "2026-12-02T06:00:10Z" });
    expect(cpuCores(read, undefined)).toBeUndefined();
    expect(cpuCores(read, { at: "2026-12-02T06:00:06Z", cpuCoreSeconds: 11 })).toBe(0.5);
    // A counter that went back, or no time between the reads: no rate rather than a wrong one.
    expect(cpuCores(read, { at: "2026-12-02T06:00:06Z", cpuCoreSeconds: 14 })).toBeUndefined();
    expect(cpuCores(read, { at: "2026-12-02T06:00:10Z", cpuCoreSeconds: 12 })).toBeUndefined();
    expect(runKey(read)).toBe("ns/p-1/uid-1/sandbox/2026-12-02T06:00:02Z");
  });
});

describe("sandboxSample", () => {
  const node = { cpuCores: 4, memoryBytes: 16 * GIB, diskBytes: 200 * GIB };
  const at = "2026-12-02T06:00:10Z";

  it("makes E2B's figures from the sandbox's own runs: CPU in percent of its whole CPUs", () => {
    const p = pod({ claimedAt: CLAIMED, limits: { cpu: "1500m", memory: "2Gi" }, sidecar: true });
    const figures = [
      fig({
        cpuNanoCores: 1_000_000_000,
        memoryWorkingSetBytes: 300,
        memoryCacheBytes: 50,
        diskUsedBytes: 4096,
        diskCapacityBytes: 50 * GIB,
      }),
      fig({ container: "sidecar", cpuNanoCores: 500_000_000, memoryWorkingSetBytes: 200, diskUsedBytes: 10 }),
      // The idle run before the claim, still reported during the swap: left out.
      fig({ startTime: "2026-12-02T05:00:00Z", cpuNanoCores: 4_000_000_000, memoryWorkingSetBytes: 10 ** 9 }),
    ];
    expect(sandboxSample({ pod: p, node, figures, at })).toEqual({
      sandboxId: "sbx-1",
      at,
      cpuCount: 3,
      cpuUsedPct: 50,
      memUsed: 500,
      memTotal: 3 * GIB,
      memCache: 50,
      diskUsed: 4106,
      diskTotal: 50 * GIB,
    });
  });

  it("shows nothing before the sandbox's own run is reported, or before a counter has a rate", () => {
    const p = pod({ claimedAt: CLAIMED });
    const idle = fig({ startTime: "2026-12-02T05:00:00Z", cpuNanoCores: 1 });
    expect(sandboxSample({ pod: p, node, figures: [idle], at })).toBeUndefined();
    const counter = fig({ cpuCoreSeconds: 20, memoryWorkingSetBytes: 7 });
    expect(sandboxSample({ pod: p, node, figures: [counter], at })).toBeUndefined();
    const second = sandboxSample({
      pod: p,
      node,
      figures: [counter],
      at,
      previous: (key) =>
        key === runKey(counter) ? { at: "2026-12-02T06:00:09Z", cpuCoreSeconds: 18 } : undefined,
    });
    // 2 core-seconds in 1 s on a pod without limits: 2 of the node's 4 CPUs.
    expect(second).toMatchObject({
      cpuCount: 4,
      cpuUsedPct: 50,
      memUsed: 7,
      memTotal: 16 * GIB,
      diskTotal: 200 * GIB,
    });
    const unlabelled = { ...p, metadata: { ...p.metadata, labels: {} } };
    expect(sandboxSample({ pod: unlabelled, node, figures: [fig({ cpuNanoCores: 1 })], at })).toBeUndefined();
  });
});
