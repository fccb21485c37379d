import { describe, expect, it } from "vitest";
import { parseSummary, parseSummaryText } from "../../lib/usage/summary.ts";

// The kubelet's /stats/summary as the real node's kubelet answers it (trimmed to what is read).
const AT = "2026-12-02T06:00:05Z";
const summary = {
  node: { nodeName: "real-node-0" },
  pods: [
    {
      podRef: { name: "p-abc", namespace: "audit-x", uid: "uid-1" },
      startTime: "2026-12-02T05:50:00Z",
      containers: [
        {
          name: "sandbox",
          startTime: "2026-12-02T06:00:01Z",
          cpu: {
            time: "2026-12-02T06:00:04Z",
            usageNanoCores: 987_654_321,
            usageCoreNanoSeconds: 12_500_000_000,
          },
          memory: { time: "2026-12-02T06:00:04Z", usageBytes: 150_000_000, workingSetBytes: 120_000_000 },
          rootfs: { usedBytes: 4096, capacityBytes: 100_000_000_000 },
        },
        { name: "sidecar", startTime: "2026-12-02T05:50:01Z", cpu: {}, memory: { workingSetBytes: 1000 } },
      ],
    },
  ],
};

describe("parseSummary", () => {
  it("reads each container's figures, converting the counter to seconds and splitting off the cache", () => {
    expect(parseSummary(summary, AT)).toEqual([
      {
        namespace: "audit-x",
        pod: "p-abc",
        podUid: "uid-1",
        container: "sandbox",
        startTime: "2026-12-02T06:00:01Z",
        at: "2026-12-02T06:00:04Z",
        cpuNanoCores: 987_654_321,
        cpuCoreSeconds: 12.5,
        memoryWorkingSetBytes: 120_000_000,
        memoryCacheBytes: 30_000_000,
        diskUsedBytes: 4096,
        diskCapacityBytes: 100_000_000_000,
      },
      // A figure the kubelet did not give stays absent (never a made-up zero); `at` is the read's.
      {
        namespace: "audit-x",
        pod: "p-abc",
        podUid: "uid-1",
        container: "sidecar",
        startTime: "2026-12-02T05:50:01Z",
        at: AT,
        memoryWorkingSetBytes: 1000,
      },
    ]);
  });

  it("keeps what it can of a malformed answer and never throws", () => {
    const messy = {
      pods: [
        null,
        { podRef: { name: "no-namespace" }, containers: [{ name: "c" }] },
        { podRef: { name: "p", namespace: "n" }, containers: "not a list" },
        {
          podRef: { name: "p", namespace: "n" },
          containers: [
            7,
            { startTime: "2026-12-02T06:00:00Z" },
            {
              name: "ok",
              cpu: { usageNanoCores: -5, usageCoreNanoSeconds: "12" },
              memory: { workingSetBytes: Number.NaN, usageBytes: 10 },
              rootfs: "full",
            },
          ],
        },
      ],
    };
    expect(parseSummary(messy, AT)).toEqual([{ namespace: "n", pod: "p", container: "ok", at: AT }]);
    for (const junk of [undefined, null, 42, "x", [], { pods: {} }, { pods: null }])
      expect(parseSummary(junk, AT)).toEqual([]);
  });

  it("reads the proxy's text: JSON that is not a summary gives nothing, not JSON at all undefined", () => {
    expect(parseSummaryText(JSON.stringify(summary), AT)).toHaveLength(2);
    expect(parseSummaryText(JSON.stringify({ kind: "Status" }), AT)).toEqual([]);
    expect(parseSummaryText("<html>bad gateway</html>", AT)).toBeUndefined();
    expect(parseSummaryText("", AT)).toBeUndefined();
  });
});
