import { describe, expect, it } from "vitest";
import {
  e2bMetric,
  MAX_METRIC_IDS,
  nativeMetric,
  rfc3339Range,
  sandboxIdList,
  unixRange,
} from "../../lib/usage/metric-answers.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";

const sample: UsageSample = {
  sandboxId: "sbx-1",
  at: "2026-12-02T06:00:10Z",
  cpuCount: 2,
  cpuUsedPct: 37.5,
  memUsed: 100,
  memTotal: 1000,
  memCache: 5,
  diskUsed: 10,
  diskTotal: 10_000,
};

describe("the answers' shapes", () => {
  it("is E2B's SandboxMetric, every field its spec requires", () => {
    expect(e2bMetric(sample)).toEqual({
      timestamp: "2026-12-02T06:00:10Z",
      timestampUnix: 1796191210,
      cpuCount: 2,
      cpuUsedPct: 37.5,
      memUsed: 100,
      memTotal: 1000,
      memCache: 5,
      diskUsed: 10,
      diskTotal: 10_000,
    });
  });

  it("names the units in the native answer", () => {
    expect(nativeMetric(sample)).toEqual({
      at: "2026-12-02T06:00:10Z",
      cpuCount: 2,
      cpuUsedPercent: 37.5,
      memoryUsedBytes: 100,
      memoryTotalBytes: 1000,
      memoryCacheBytes: 5,
      diskUsedBytes: 10,
      diskTotalBytes: 10_000,
    });
  });
});

describe("the queries", () => {
  it("reads E2B's start and end in unix seconds, naming the field that is wrong", () => {
    expect(unixRange(undefined, undefined)).toEqual({ ok: true });
    expect(unixRange("1796191200", "1796191260")).toEqual({
      ok: true,
      from: "2026-12-02T06:00:00Z",
      to: "2026-12-02T06:01:00Z",
    });
    for (const bad of ["-1", "1.5", "soon", "", "99999999999999"])
      expect(unixRange(bad, undefined)).toMatchObject({ ok: false, field: "start" });
    expect(unixRange(undefined, "x")).toMatchObject({ ok: false, field: "end" });
    expect(unixRange("20", "10")).toEqual({ ok: false, field: "start", message: "must not be after end" });
  });

  it("reads the native from and to in RFC 3339", () => {
    expect(rfc3339Range("2026-12-02T06:00:00Z", "2026-12-02T07:00:00+01:00")).toEqual({
      ok: true,
      from: "2026-12-02T06:00:00.000Z",
      to: "2026-12-02T06:00:00.000Z",
    });
    expect(rfc3339Range("yesterday", undefined)).toMatchObject({ ok: false, field: "from" });
    expect(rfc3339Range(undefined, "2026-12-02")).toMatchObject({ ok: false, field: "to" });
    expect(rfc3339Range("2026-12-02T07:00:00Z", "2026-12-02T06:00:00Z")).toMatchObject({
      ok: false,
      field: "from",
    });
  });

  it("reads sandbox_ids: required, distinct, bounded as E2B bounds them", () => {
    expect(sandboxIdList("a, b,,a")).toEqual({ ok: true, ids: ["a", "b"] });
    expect(sandboxIdList(undefined)).toMatchObject({ ok: false });
    const many = Array.from({ length: MAX_METRIC_IDS + 1 }, (_, i) => `s${i}`).join(",");
    expect(sandboxIdList(many)).toEqual({
      ok: false,
      message: "sandbox_ids: too many sandboxes requested, maximum is 100",
    });
  });
});
