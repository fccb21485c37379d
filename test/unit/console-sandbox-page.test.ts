import { describe, expect, it } from "vitest";
import type { SandboxView } from "../../lib/claims/sandbox-view.ts";
import {
  NO_USAGE_SAMPLES,
  NO_USAGE_STORE,
  type SandboxPage,
  sandboxPageView,
} from "../../lib/console/sandbox-page.ts";
import { usageCharts } from "../../lib/console/usage-chart.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";

// The sandbox page's CPU and memory charts (the console's line chart, as the pool charts use it)
// and what the page says in their place when there is nothing to draw.

const NOW = new Date("2026-12-02T10:00:00Z");
const MiB = 1024 * 1024;
const render = async (h: unknown) => String(await h);
/** svgs are the page's charts, each as its own string. */
const svgs = (page: string) => [...page.matchAll(/<svg [\s\S]*?<\/svg>/g)].map((m) => m[0]);
const attr = (svg: string, name: string) => new RegExp(`<svg [^>]*\\b${name}="([^"]*)"`).exec(svg)?.[1];

const sample = (secondsAgo: number, cpu: number, mem: number): UsageSample => ({
  sandboxId: "sbx-1",
  at: new Date(NOW.getTime() - secondsAgo * 1000).toISOString(),
  cpuCount: 2,
  cpuUsedPct: cpu,
  memUsed: mem * MiB,
  memTotal: 512 * MiB,
  memCache: 0,
  diskUsed: 0,
  diskTotal: 0,
});
const SAMPLES = [sample(300, 5, 40), sample(200, 87.5, 300), sample(100, 12.25, 120)];

const live = { sandboxId: "sbx-1", namespace: "ns", pool: "p", pod: "p-1", phase: "running" } as SandboxView;

describe("usageCharts", () => {
  it("draws CPU % and memory used from the first sample to the end, with the newest and peak figures", async () => {
    const [cpu, memory] = svgs(await render(usageCharts("sbx-1", SAMPLES, NOW.getTime())));
    expect(attr(cpu ?? "", "data-metric")).toBe("cpu");
    expect(attr(cpu ?? "", "data-sandbox")).toBe("sbx-1");
    expect(attr(cpu ?? "", "data-points")).toBe("3");
    expect(attr(cpu ?? "", "data-cpu")).toBe("12.25");
    expect(attr(cpu ?? "", "data-cpus")).toBe("2");
    expect(attr(cpu ?? "", "data-peak")).toBe("87.5");
    expect(cpu).toContain(
      '<title id="usage-chart-sbx-1-cpu-title">CPU of sbx-1: 12.3 % of 2 CPUs at 09:58:20 UTC; peak 87.5 %</title>',
    );
    expect(attr(memory ?? "", "data-metric")).toBe("memory");
    expect(attr(memory ?? "", "data-memory")).toBe(String(120 * MiB));
    expect(attr(memory ?? "", "data-memory-total")).toBe(String(512 * MiB));
    expect(attr(memory ?? "", "data-peak")).toBe(String(300 * MiB));
    expect(memory).toContain(
      "Memory of sbx-1: 120.0 MiB of 512.0 MiB at 09:58:20 UTC; peak 300.0 MiB</title>",
    );
    // The span runs from the first sample (09:55:00) to the end (10:00:00), in seconds.
    expect(memory).toMatch(
      /from 09:55:00 to 10:00:00 UTC, 3 samples; the vertical axis runs from 0 to 300\.0 MiB\./,
    );
    for (const label of [">09:55:00<", ">09:57:30<", ">10:00:00<"]) expect(cpu).toContain(label);
    // Three points each, left to right, the CPU peak at the top of its axis.
    const xs = (/<polyline class="cpu" points="([^"]*)"/.exec(cpu ?? "")?.[1] ?? "").split(" ");
    expect(xs).toHaveLength(3);
    expect(xs.map((p) => Number(p.split(",")[0]))).toEqual(
      [...xs.map((p) => Number(p.split(",")[0]))].sort((a, b) => a - b),
    );
    expect(xs[1]?.split(",")[1]).toBe("20.0");
    expect(cpu).not.toMatch(/<script|on[a-z]+=/i);
  });
});

describe("sandboxPageView", () => {
  it("shows a running sandbox's details and its charts up to now", async () => {
    const page = await render(sandboxPageView({ sandboxId: "sbx-1", live, samples: SAMPLES }, NOW));
    expect(page).toContain('data-sandbox="sbx-1"');
    expect(page).toContain("ns/p");
    expect(svgs(page)).toHaveLength(2);
    expect(page).toContain(">10:00:00<");
  });

  it("ends an ended sandbox's charts with its last sample, and shows its record", async () => {
    const record = {
      sandboxId: "sbx-1",
      namespace: "ns",
      poolName: "p",
      podName: "p-1",
      terminatedAt: "2026-12-02T09:58:30Z",
      stopReason: "Released",
      containerImages: {},
      metadata: {},
      cpuMillis: 0,
      memoryBytes: 0,
    } as SandboxRecord;
    const page = await render(sandboxPageView({ sandboxId: "sbx-1", record, samples: SAMPLES }, NOW));
    expect(page).toContain("2026-12-02T09:58:30Z (Released)");
    expect(page).toMatch(/from 09:55:00 to 09:58:20 UTC/);
  });

  it("says so when the host keeps no samples, there are none yet, or their database is down", async () => {
    const of = async (samples: SandboxPage["samples"]) =>
      render(sandboxPageView({ sandboxId: "sbx-1", live, samples }, NOW));
    const none = await of("none-kept");
    expect(none).toContain(NO_USAGE_STORE);
    expect(svgs(none)).toHaveLength(0);
    const empty = await of([]);
    expect(empty).toContain(NO_USAGE_SAMPLES);
    expect(svgs(empty)).toHaveLength(0);
    const down = await of("down");
    expect(down).toContain("cannot be read right now");
    expect(svgs(down)).toHaveLength(0);
  });
});
