// A pool's idle/running/desired over the last hour as an inline SVG: no scripts, every label escaped.
import { html } from "hono/html";
import type { Html } from "./layout.ts";
import { POOL_SAMPLE_WINDOW_MS, type PoolPoint, type PoolSample, type PoolSamples } from "./pool-samples.ts";

/** PoolCharts gives the chart of a pool ("namespace/name") for the pools view. */
export type PoolCharts = (pool: string) => Html;

/**
 * poolCharts charts each pool from `samples` as of `now`; undefined when the host keeps no
 * samples (the pools view then says so instead).
 */
export function poolCharts(
  samples: Pick<PoolSamples, "window"> | undefined,
  now: Date,
): PoolCharts | undefined {
  return samples && ((pool) => poolChart(pool, samples.window(pool, now), now));
}

/** SERIES are the lines drawn: the sample's field, its legend label, its colour and dashes. */
const SERIES: readonly { field: keyof PoolSample; color: string; dash: string }[] = [
  { field: "desired", color: "#7a8594", dash: "4 3" },
  { field: "idle", color: "#2b6cb0", dash: "" },
  { field: "running", color: "#2f855a", dash: "" },
];

/** Geometry of the chart, in SVG units (it scales with its width attribute). */
const W = 360;
const H = 132;
const LEFT = 30;
const RIGHT = 10;
const TOP = 20;
const BOTTOM = 104;

/** hhmm is a time as HH:MM in UTC (the chart's labels; the host's locale plays no part). */
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/**
 * poolChart draws a pool's points (PoolSamples.window) over the `spanMs` before `now`: idle,
 * running and desired as three lines, a vertical axis from 0 to the largest figure, and UTC
 * times along the bottom. The <svg> carries the newest figures as data-idle/-running/-desired
 * (none when there are no points) and data-points, and says them in its <title>; its <desc> says
 * what the axes span. Everything interpolated is escaped (hono/html), so a pool name is text.
 */
export function poolChart(
  pool: string,
  points: readonly PoolPoint[],
  now: Date,
  spanMs = POOL_SAMPLE_WINDOW_MS,
): Html {
  const end = now.getTime();
  const start = end - spanMs;
  const shown = points.filter((p) => p.at > start && p.at <= end);
  const last = shown.at(-1);
  const top = Math.max(1, ...shown.flatMap((p) => SERIES.map((s) => p[s.field])));
  const x = (at: number) => (LEFT + ((W - LEFT - RIGHT) * (at - start)) / spanMs).toFixed(1);
  const y = (v: number) => (BOTTOM - ((BOTTOM - TOP) * v) / top).toFixed(1);
  const id = `pool-chart-${pool}`;
  const title = last
    ? `${pool}, last hour: idle ${last.idle}, running ${last.running}, desired ${last.desired} at ${hhmm(last.at)} UTC`
    : `${pool}, last hour: no samples yet`;
  const desc = `Idle, running and desired pods of ${pool} from ${hhmm(start)} to ${hhmm(end)} UTC, ${shown.length} samples; the vertical axis runs from 0 to ${top} pods.`;
  const lines = SERIES.map((s) => {
    const coords = shown.map((p) => `${x(p.at)},${y(p[s.field])}`).join(" ");
    return html`<polyline class="${s.field}" points="${coords}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dash ? html` stroke-dasharray="${s.dash}"` : ""} />${
      last
        ? html`<circle class="${s.field}" cx="${x(last.at)}" cy="${y(last[s.field])}" r="2" fill="${s.color}" />`
        : ""
    }`;
  });
  const legend = SERIES.map(
    (s, i) =>
      html`<text x="${LEFT + i * 80}" y="12" fill="${s.color}">${s.field}${last ? ` ${last[s.field]}` : ""}</text>`,
  );
  const ticks = [start, start + spanMs / 2, end].map(
    (t, i) =>
      html`<text x="${x(t)}" y="${BOTTOM + 16}" text-anchor="${["start", "middle", "end"][i]}">${hhmm(t)}</text>`,
  );
  return html`<svg class="pool-chart" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title ${id}-desc" data-pool="${pool}" data-points="${shown.length}"${
    last ? html` data-idle="${last.idle}" data-running="${last.running}" data-desired="${last.desired}"` : ""
  } font-size="10" font-family="system-ui,sans-serif">
    <title id="${id}-title">${title}</title>
    <desc id="${id}-desc">${desc}</desc>
    <g fill="#566">${legend}</g>
    <g stroke="#c9d0d8" stroke-width="1">
      <line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${BOTTOM}" />
      <line x1="${LEFT}" y1="${BOTTOM}" x2="${W - RIGHT}" y2="${BOTTOM}" />
    </g>
    <g fill="#778">
      <text x="${LEFT - 4}" y="${TOP + 4}" text-anchor="end">${top}</text>
      <text x="${LEFT - 4}" y="${BOTTOM}" text-anchor="end">0</text>
      ${ticks}
    </g>
    ${last ? lines : html`<text x="${W / 2}" y="${(TOP + BOTTOM) / 2}" text-anchor="middle" fill="#778">no samples yet</text>`}
  </svg>`;
}

/**
 * NO_POOL_SAMPLES is what the pools view says on a host that keeps no samples, in place of the
 * charts: the Cloudflare Worker (nothing outlives a request there), or a Node host told not to.
 */
export const NO_POOL_SAMPLES =
  "No charts here: this host keeps no samples of its pools (a Cloudflare Worker keeps nothing between requests; a Node host with AGENTBOX_CONSOLE_SAMPLE_SECONDS=0 samples nothing). The pool gauges on /metrics give the figures now.";
