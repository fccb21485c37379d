import { describe, expect, it } from "vitest";
import { poolsView } from "../../lib/console/pages.ts";
import { poolChart, poolCharts } from "../../lib/console/pool-chart.ts";
import { PoolSamples } from "../../lib/console/pool-samples.ts";

const NOW = new Date("2026-11-26T10:00:00Z");
const ago = (minutes: number) => NOW.getTime() - minutes * 60_000;
const render = async (h: unknown) => String(await h);
/** attr reads one attribute of the chart's <svg> element. */
const attr = (svg: string, name: string) => new RegExp(`<svg [^>]*\\b${name}="([^"]*)"`).exec(svg)?.[1];

describe("poolChart", () => {
  const points = [
    { at: ago(50), idle: 3, running: 0, desired: 3 },
    { at: ago(20), idle: 2, running: 1, desired: 3 },
    { at: ago(1), idle: 1, running: 4, desired: 5 },
  ];

  it("draws idle, running and desired with the newest figures on the svg and in its title", async () => {
    const svg = await render(poolChart("team-a/python", points, NOW));
    expect(attr(svg, "data-pool")).toBe("team-a/python");
    expect(attr(svg, "data-points")).toBe("3");
    expect(attr(svg, "data-idle")).toBe("1");
    expect(attr(svg, "data-running")).toBe("4");
    expect(attr(svg, "data-desired")).toBe("5");
    expect(attr(svg, "role")).toBe("img");
    expect(attr(svg, "aria-labelledby")).toBe("pool-chart-team-a/python-title pool-chart-team-a/python-desc");
    expect(svg).toContain(
      '<title id="pool-chart-team-a/python-title">team-a/python, last hour: idle 1, running 4, desired 5 at 09:59 UTC</title>',
    );
    expect(svg).toMatch(
      /<desc id="pool-chart-team-a\/python-desc">[^<]*from 09:00 to 10:00 UTC, 3 samples; the vertical axis runs from 0 to 5 pods\.<\/desc>/,
    );
    for (const series of ["idle", "running", "desired"]) {
      const line = new RegExp(`<polyline class="${series}" points="([^"]*)"`).exec(svg)?.[1];
      expect(line?.split(" "), series).toHaveLength(3);
    }
    // Time runs left to right: the first point 10 min after the left edge, the newest near the right.
    const idle = /<polyline class="idle" points="([^"]*)"/.exec(svg)?.[1]?.split(" ") ?? [];
    const xs = idle.map((p) => Number(p.split(",")[0]));
    expect(xs[0]).toBeLessThan(xs[1] ?? 0);
    expect(xs[1]).toBeLessThan(xs[2] ?? 0);
    // The y axis is 0 at the bottom and the largest figure (5) at the top: running 4 sits above idle 1.
    const lastY = (series: string) =>
      Number(new RegExp(`<circle class="${series}" cx="[^"]*" cy="([^"]*)"`).exec(svg)?.[1]);
    expect(lastY("running")).toBeLessThan(lastY("idle"));
    // Time labels along the bottom, in UTC.
    for (const label of [">09:00<", ">09:30<", ">10:00<"]) expect(svg).toContain(label);
    expect(svg).not.toMatch(/<script|on[a-z]+=/i);
  });

  it("leaves out points outside the hour and says when there are none", async () => {
    const svg = await render(poolChart("ns/p", [{ at: ago(61), idle: 9, running: 9, desired: 9 }], NOW));
    expect(attr(svg, "data-points")).toBe("0");
    expect(attr(svg, "data-running")).toBeUndefined();
    expect(svg).toContain("ns/p, last hour: no samples yet</title>");
    expect(svg).toContain(">no samples yet</text>");
    expect(svg).not.toContain("<polyline");
  });

  it("escapes every label", async () => {
    const evil = `x"><script>alert(1)</script>/p' onload='alert(2)`;
    const svg = await render(poolChart(evil, points, NOW));
    const escaped = "x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;/p&#39; onload=&#39;alert(2)";
    expect(attr(svg, "data-pool")).toBe(escaped);
    expect(svg).toContain(`<title id="pool-chart-${escaped}-title">${escaped}, last hour:`);
    // Only the chart's own elements, and no attribute the name could have added.
    const tags = new Set([...svg.matchAll(/<([a-z]+)/g)].map((m) => m[1]));
    expect([...tags].sort()).toEqual(["circle", "desc", "g", "line", "polyline", "svg", "text", "title"]);
    expect(svg).not.toMatch(/ onload=['"]/);
  });
});

describe("the pools view's charts", () => {
  const pool = {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { namespace: "ns", name: "p" },
    spec: { replicas: 1 },
  } as unknown as Parameters<typeof poolsView>[0][number];

  it("charts each pool from the host's samples", async () => {
    const samples = new PoolSamples();
    samples.add("ns/p", { idle: 0, running: 1, desired: 1 }, new Date(ago(2)));
    const view = await render(poolsView([pool], poolCharts(samples, NOW)));
    expect(view).toContain("<th>last hour</th>");
    expect(view).toMatch(/<tr data-pool="ns\/p">[\s\S]*<svg class="pool-chart"[^>]*data-running="1"/);
    expect(view).not.toContain("No charts here");
  });

  it("says why there are no charts on a host without samples (the Worker)", async () => {
    const view = await render(poolsView([pool], poolCharts(undefined, NOW)));
    expect(view).not.toContain("<svg");
    expect(view).toContain("No charts here: this host keeps no samples of its pools");
  });
});
