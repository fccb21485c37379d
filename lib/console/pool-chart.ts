// A pool's idle/running/desired over the last hour, drawn by the console's line chart.
import type { Html } from "./layout.ts";
import { type ChartSeries, hhmm, lineChart } from "./line-chart.ts";
import { POOL_SAMPLE_WINDOW_MS, type PoolPoint, type PoolSamples } from "./pool-samples.ts";

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

/** SERIES are the lines drawn: the sample's field, its colour and dashes. */
const SERIES: readonly ChartSeries<PoolPoint>[] = (
  [
    { field: "desired", color: "#7a8594", dash: "4 3" },
    { field: "idle", color: "#2b6cb0", dash: "" },
    { field: "running", color: "#2f855a", dash: "" },
  ] as const
).map((s) => ({ name: s.field, value: (p: PoolPoint) => p[s.field], color: s.color, dash: s.dash }));

/**
 * poolChart draws a pool's points (PoolSamples.window) over the `spanMs` before `now` with the
 * console's line chart: idle, running and desired as three lines, a vertical axis from 0 to the
 * largest figure, and UTC times along the bottom. The <svg> carries the newest figures as
 * data-idle/-running/-desired (none when there are no points) and data-points, and says them in
 * its <title>; its <desc> says what the axes span.
 */
export function poolChart(
  pool: string,
  points: readonly PoolPoint[],
  now: Date,
  spanMs = POOL_SAMPLE_WINDOW_MS,
): Html {
  const end = now.getTime();
  const start = end - spanMs;
  return lineChart({
    className: "pool-chart",
    key: pool,
    series: SERIES,
    points,
    start,
    end,
    data: { pool },
    newest: (last) => ({ idle: last.idle, running: last.running, desired: last.desired }),
    title: (last) =>
      last
        ? `${pool}, last hour: idle ${last.idle}, running ${last.running}, desired ${last.desired} at ${hhmm(last.at)} UTC`
        : `${pool}, last hour: no samples yet`,
    desc: (shown, top) =>
      `Idle, running and desired pods of ${pool} from ${hhmm(start)} to ${hhmm(end)} UTC, ${shown} samples; the vertical axis runs from 0 to ${top} pods.`,
  });
}

/**
 * NO_POOL_SAMPLES is what the pools view says on a host that keeps no samples, in place of the
 * charts: the Cloudflare Worker (nothing outlives a request there), or a Node host told not to.
 */
export const NO_POOL_SAMPLES =
  "No charts here: this host keeps no samples of its pools (a Cloudflare Worker keeps nothing between requests; a Node host with AGENTBOX_CONSOLE_SAMPLE_SECONDS=0 samples nothing). The pool gauges on /metrics give the figures now.";
