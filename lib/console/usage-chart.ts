// A sandbox's CPU and memory use over its life, drawn by the console's line chart.
import { html } from "hono/html";
import type { UsageSample } from "../usage/sample.ts";
import { bytes, type Html } from "./layout.ts";
import { hhmm, lineChart } from "./line-chart.ts";

/** UsagePoint is a sample as the charts draw it (`at` in ms since the epoch). */
type UsagePoint = Omit<UsageSample, "at"> & { at: number };

const MiB = 1024 * 1024;

/** percent writes a CPU figure in percent of the sandbox's CPUs, to a tenth. */
export const percent = (v: number) => `${v.toFixed(1)} %`;
/** short writes a figure for the axis's narrow margin: 41 %, 468M, 12G. */
const short = {
  cpu: (v: number) => `${Math.round(v)}%`,
  memory: (v: number) =>
    v >= 10 * 1024 * MiB ? `${Math.round(v / (1024 * MiB))}G` : `${Math.round(v / MiB)}M`,
};
/** hhmmss is a time as HH:MM:SS in UTC, for spans too short for minutes. */
const hhmmss = (ms: number) => new Date(ms).toISOString().slice(11, 19);

/**
 * usageCharts draws a sandbox's samples (oldest first, as UsageStore.range gives them) as two
 * charts from its first sample to `end` (now while it runs, else its last sample): CPU use in
 * percent of its CPUs, and memory used (the working set). Each <svg class="usage-chart"> carries
 * data-sandbox, data-metric (cpu, memory), data-peak, data-points and the newest figures
 * (data-cpu and data-cpus, data-memory and data-memory-total), and says them in its <title>.
 */
export function usageCharts(sandboxId: string, samples: readonly UsageSample[], end: number): Html {
  const points: UsagePoint[] = samples
    .map((s) => ({ ...s, at: Date.parse(s.at) }))
    .filter((p) => Number.isFinite(p.at));
  const start = points[0]?.at ?? end;
  const last = Math.max(end, points.at(-1)?.at ?? end);
  const time = last - start < 3 * 3600_000 ? hhmmss : hhmm;
  const span = `from ${time(start)} to ${time(last)} UTC`;
  const chart = (
    metric: "cpu" | "memory",
    value: (p: UsagePoint) => number,
    format: (v: number) => string,
    floor: number,
    say: (p: UsagePoint) => string,
    newest: (p: UsagePoint) => Record<string, number>,
  ) => {
    const peak = Math.max(0, ...points.map(value));
    const name = metric === "cpu" ? "CPU" : "Memory";
    return lineChart({
      className: "usage-chart",
      key: `${sandboxId}-${metric}`,
      series: [{ name: metric, value, color: metric === "cpu" ? "#2b6cb0" : "#2f855a" }],
      points,
      start,
      end: last,
      data: { sandbox: sandboxId, metric, peak },
      newest,
      floor,
      format,
      axis: short[metric],
      time,
      legendGap: 120,
      title: (p) =>
        p
          ? `${name} of ${sandboxId}: ${say(p)} at ${time(p.at)} UTC; peak ${format(peak)}`
          : `${name} of ${sandboxId}: no samples yet`,
      desc: (shown, top) =>
        `${name} use of sandbox ${sandboxId} ${span}, ${shown} samples; the vertical axis runs from 0 to ${top}.`,
    });
  };
  return html`<div class="usage-charts" style="display:flex;gap:24px;flex-wrap:wrap">
    ${chart(
      "cpu",
      (p) => p.cpuUsedPct,
      percent,
      1,
      (p) => `${percent(p.cpuUsedPct)} of ${p.cpuCount} CPU${p.cpuCount === 1 ? "" : "s"}`,
      (p) => ({ cpu: p.cpuUsedPct, cpus: p.cpuCount }),
    )}
    ${chart(
      "memory",
      (p) => p.memUsed,
      bytes,
      MiB,
      (p) => `${bytes(p.memUsed)} of ${bytes(p.memTotal)}`,
      (p) => ({ memory: p.memUsed, "memory-total": p.memTotal }),
    )}
  </div>`;
}
