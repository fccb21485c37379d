import type { V1Container, V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import {
  CLAIMED_AT_ANNOTATION,
  CONTAINER_ID_ANNOTATION,
  EXIT_CODE_ANNOTATION,
  FAILURE_MESSAGE_ANNOTATION,
  FAILURE_REASON_ANNOTATION,
  INPLACE_UPDATE_STATE_ANNOTATION,
  RUNNING_IMAGES_ANNOTATION,
  SANDBOX_ID_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_METADATA_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  STARTED_AT_ANNOTATION,
  STOP_REASON_ANNOTATION,
  TEAM_LABEL,
  TERMINATED_AT_ANNOTATION,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import { SandboxRecord } from "../../lib/history/record.ts";
import { parseQuantity, quantityMilliValue, quantityValue } from "../../lib/lifecycle/quantity.ts";
import { captureStopRecord } from "../../lib/lifecycle/stop-record.ts";

const NOW = new Date("2026-05-10T12:00:00.500Z");

function stoppingPod(
  annotations: Record<string, string>,
  containers?: V1Container[],
  labels: Record<string, string> = {},
): V1Pod {
  return {
    metadata: {
      name: "pool-a-x1",
      namespace: "ns",
      labels: { [SANDBOX_POOL_LABEL]: "pool-a", [SANDBOX_PHASE_LABEL]: "stopping", ...labels },
      annotations,
    },
    spec: { containers: containers ?? [{ name: "main", image: "registry.example/idle:1" }] },
  };
}

describe("captureStopRecord", () => {
  it("reads everything the claim and release wrote", () => {
    const pod = stoppingPod(
      {
        [SANDBOX_ID_ANNOTATION]: "sb-1",
        [CLAIMED_AT_ANNOTATION]: "2026-05-10T11:00:00Z",
        [STARTED_AT_ANNOTATION]: "2026-05-10T11:00:05Z",
        [TERMINATED_AT_ANNOTATION]: "2026-05-10T11:30:00Z",
        [RUNNING_IMAGES_ANNOTATION]: '{"main":"registry.example/app:2"}',
        [SANDBOX_METADATA_ANNOTATION]: '{"purpose":"eval","n":3}',
        [STOP_REASON_ANNOTATION]: "Failed",
        [FAILURE_REASON_ANNOTATION]: "OOMKilled",
        [FAILURE_MESSAGE_ANNOTATION]: "out of memory",
        [EXIT_CODE_ANNOTATION]: "137",
        [CONTAINER_ID_ANNOTATION]: "containerd://abc",
      },
      [
        {
          name: "main",
          image: "registry.example/idle:1",
          resources: { requests: { cpu: "1500m", memory: "1Gi" } },
        },
        { name: "proxy", image: "proxy:1", resources: { limits: { cpu: "0.1", memory: "64Mi" } } },
        { name: "bare", image: "bare:1" },
      ],
      { [TEAM_LABEL]: "t1", [USER_LABEL]: "u1" },
    );
    const record = captureStopRecord(pod, NOW);
    expect(record).toEqual({
      sandboxId: "sb-1",
      namespace: "ns",
      poolName: "pool-a",
      podName: "pool-a-x1",
      team: "t1",
      user: "u1",
      claimedAt: "2026-05-10T11:00:00Z",
      startedAt: "2026-05-10T11:00:05Z",
      terminatedAt: "2026-05-10T11:30:00Z",
      containerImages: { main: "registry.example/app:2" },
      metadata: { purpose: "eval" },
      cpuMillis: 1600,
      memoryBytes: 1024 ** 3 + 64 * 1024 ** 2,
      stopReason: "Failed",
      failureReason: "OOMKilled",
      failureMessage: "out of memory",
      exitCode: 137,
      containerId: "containerd://abc",
    });
    expect(v.safeParse(SandboxRecord, record).success).toBe(true);
  });

  it("requests win over limits per container", () => {
    const record = captureStopRecord(
      stoppingPod({ [SANDBOX_ID_ANNOTATION]: "s" }, [
        {
          name: "m",
          image: "i",
          resources: { requests: { cpu: "250m" }, limits: { cpu: "2", memory: "1G" } },
        },
      ]),
      NOW,
    );
    expect(record?.cpuMillis).toBe(250);
    expect(record?.memoryBytes).toBe(1e9);
  });

  it.each<[string, Record<string, string>, string]>([
    [
      "annotated reason wins",
      { [STOP_REASON_ANNOTATION]: "Released", [STARTED_AT_ANNOTATION]: "x" },
      "Released",
    ],
    ["no annotation, never started: Canceled", {}, "Canceled"],
    ["no annotation, started: Completed", { [STARTED_AT_ANNOTATION]: "2026-05-10T11:00:05Z" }, "Completed"],
    ["unknown annotated reason falls back: Canceled", { [STOP_REASON_ANNOTATION]: "Weird" }, "Canceled"],
  ])("stop reason: %s", (_name, annotations, reason) => {
    expect(
      captureStopRecord(stoppingPod({ [SANDBOX_ID_ANNOTATION]: "s", ...annotations }), NOW)?.stopReason,
    ).toBe(reason);
  });

  it("tolerates missing and malformed annotations", () => {
    const record = captureStopRecord(
      stoppingPod({
        [SANDBOX_ID_ANNOTATION]: "s",
        [RUNNING_IMAGES_ANNOTATION]: "{broken",
        [SANDBOX_METADATA_ANNOTATION]: "[1,2]",
        [EXIT_CODE_ANNOTATION]: "boom",
      }),
      NOW,
    );
    expect(record).toEqual({
      sandboxId: "s",
      namespace: "ns",
      poolName: "pool-a",
      podName: "pool-a-x1",
      terminatedAt: "2026-05-10T12:00:00Z",
      containerImages: { main: "registry.example/idle:1" },
      metadata: {},
      cpuMillis: 0,
      memoryBytes: 0,
      stopReason: "Canceled",
    });
  });

  it("falls back to the sandbox-id label, and to the running snapshot for the container id", () => {
    const record = captureStopRecord(
      stoppingPod(
        {
          [INPLACE_UPDATE_STATE_ANNOTATION]:
            '{"phase":"completed","stableContainerStatuses":{"main":{"containerID":"containerd://run","restartCount":0}}}',
        },
        undefined,
        { [SANDBOX_ID_LABEL]: "from-label" },
      ),
      NOW,
    );
    expect(record?.sandboxId).toBe("from-label");
    expect(record?.containerId).toBe("containerd://run");
  });

  it("never-claimed pod: no record", () => {
    expect(captureStopRecord(stoppingPod({}), NOW)).toBeUndefined();
  });
});

describe("parseQuantity", () => {
  it.each<[string, number, number]>([
    // text, value (rounded up), milli value (rounded up)
    ["100m", 1, 100],
    ["1", 1, 1000],
    ["0.5", 1, 500],
    ["0.1", 1, 100],
    ["1.5", 2, 1500],
    [".25", 1, 250],
    ["2.", 2, 2000],
    ["250000u", 1, 250],
    ["5n", 1, 1],
    ["512Mi", 512 * 1024 ** 2, 512 * 1024 ** 2 * 1000],
    ["1Gi", 1024 ** 3, 1024 ** 3 * 1000],
    ["1.5Gi", 1.5 * 1024 ** 3, 1.5 * 1024 ** 3 * 1000],
    ["1Ki", 1024, 1_024_000],
    ["1G", 1e9, 1e12],
    ["1k", 1000, 1e6],
    ["2M", 2e6, 2e9],
    ["1T", 1e12, 1e15],
    ["1e3", 1000, 1e6],
    ["1E3", 1000, 1e6],
    ["5e-1", 1, 500],
    ["1E", 1e18, 1e21],
    ["1Ei", 2 ** 60, 2 ** 60 * 1000],
    ["0", 0, 0],
    ["+2", 2, 2000],
    ["-1", -1, -1000],
  ])("%s → %d (milli %d)", (text, value, milli) => {
    const q = parseQuantity(text);
    expect(q).toBeDefined();
    expect(quantityValue(q!)).toBe(value);
    expect(quantityMilliValue(q!)).toBe(milli);
  });

  it.each([
    "",
    " 1",
    "1 ",
    "abc",
    "1.2.3",
    "1K",
    "1Kb",
    "1mi",
    "Mi",
    "1e",
    "1e1000",
    "--1",
    "1,5",
    "1constructor",
    "1toString",
    "1__proto__",
  ])("%j is not a quantity", (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });
});
