// The console's one chart: series of figures over a time span as an inline SVG, no scripts,
// every label escaped. The pool charts and the sandbox's usage charts are both drawn by it.
import { html } from "hono/html";
import type { Html } from "./layout.ts";

/** ChartPoint is one moment of a chart: `at` in ms since the epoch. */
export interface ChartPoint {
  at: number;
}

/** ChartSeries is one line: its name (legend, class), its figure of a point, colour and dashes. */
export interface ChartSeries<P extends ChartPoint> {
  name: string;
  value: (p: P) => number;
  color: string;
  dash?: string;
}

/** LineChart is what lineChart draws. */
export interface LineChart<P extends ChartPoint> {
  /** className is the <svg>'s class, and `${className}-${key}` the id of its title and desc. */
  className: string;
  key: string;
  series: readonly ChartSeries<P>[];
  points: readonly P[];
  /** The span shown, in ms since the epoch: points outside it are left out. */
  start: number;
  end: number;
  /** data are data-* attributes of the <svg> (names without `data-`), whatever it shows. */
  data: Record<string, string | number>;
  /** newest are data-* attributes from the newest point shown, when there is one. */
  newest?: (last: P) => Record<string, string | number>;
  /** title says the newest figures (or that there are none); desc what the axes span. */
  title: (last: P | undefined) => string;
  desc: (shown: number, top: string) => string;
  /** floor is the least top of the vertical axis (1 pod, 1 %); format writes a figure. */
  floor?: number;
  format?: (v: number) => string;
  /** axis writes the top of the vertical axis in its narrow margin (default: format). */
  axis?: (v: number) => string;
  /** time writes a moment along the bottom (default HH:MM UTC); legendGap spaces the legend. */
  time?: (ms: number) => string;
  legendGap?: number;
}

/** Geometry of a chart, in SVG units (it scales with its width attribute). */
const W = 360;
const H = 132;
const LEFT = 36;
const RIGHT = 10;
const TOP = 20;
const BOTTOM = 104;

/** hhmm is a time as HH:MM in UTC (the charts' labels; the host's locale plays no part). */
export const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

const attrs = (data: Record<string, string | number>) =>
  Object.entries(data).map(([k, v]) => html` data-${k}="${v}"`);

/**
 * lineChart draws `points` over [start, end]: one line per series with a dot on its newest
 * figure, a vertical axis from 0 to the largest figure (at least `floor`), and times along the
 * bottom. The <svg> (role img) carries `data` and the newest point's `newest` attributes and
 * data-points; its <title> and <desc> say what it shows. Everything interpolated is escaped
 * (hono/html), so a name in a label is text.
 */
export function lineChart<P extends ChartPoint>(c: LineChart<P>): Html {
  const span = Math.max(1, c.end - c.start);
  const format = c.format ?? String;
  const time = c.time ?? hhmm;
  const shown = c.points.filter((p) => p.at >= c.start && p.at <= c.end);
  const last = shown.at(-1);
  const top = Math.max(c.floor ?? 1, ...shown.flatMap((p) => c.series.map((s) => s.value(p))));
  const x = (at: number) => (LEFT + ((W - LEFT - RIGHT) * (at - c.start)) / span).toFixed(1);
  const y = (v: number) => (BOTTOM - ((BOTTOM - TOP) * v) / top).toFixed(1);
  const id = `${c.className}-${c.key}`;
  const lines = c.series.map((s) => {
    const coords = shown.map((p) => `${x(p.at)},${y(s.value(p))}`).join(" ");
    return html`<polyline class="${s.name}" points="${coords}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dash ? html` stroke-dasharray="${s.dash}"` : ""} />${
      last
        ? html`<circle class="${s.name}" cx="${x(last.at)}" cy="${y(s.value(last))}" r="2" fill="${s.color}" />`
        : ""
    }`;
  });
  const legend = c.series.map(
    (s, i) =>
      html`<text x="${LEFT + i * (c.legendGap ?? 80)}" y="12" fill="${s.color}">${s.name}${last ? ` ${format(s.value(last))}` : ""}</text>`,
  );
  const ticks = [c.start, c.start + span / 2, c.start + span].map(
    (t, i) =>
      html`<text x="${x(t)}" y="${BOTTOM + 16}" text-anchor="${["start", "middle", "end"][i]}">${time(t)}</text>`,
  );
  return html`<svg class="${c.className}" xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="${id}-title ${id}-desc"${attrs(c.data)} data-points="${shown.length}"${
    last && c.newest ? attrs(c.newest(last)) : ""
  } font-size="10" font-family="system-ui,sans-serif">
    <title id="${id}-title">${c.title(last)}</title>
    <desc id="${id}-desc">${c.desc(shown.length, format(top))}</desc>
    <g fill="#566">${legend}</g>
    <g stroke="#c9d0d8" stroke-width="1">
      <line x1="${LEFT}" y1="${TOP}" x2="${LEFT}" y2="${BOTTOM}" />
      <line x1="${LEFT}" y1="${BOTTOM}" x2="${W - RIGHT}" y2="${BOTTOM}" />
    </g>
    <g fill="#778">
      <text x="${LEFT - 4}" y="${TOP + 4}" text-anchor="end">${(c.axis ?? format)(top)}</text>
      <text x="${LEFT - 4}" y="${BOTTOM}" text-anchor="end">0</text>
      ${ticks}
    </g>
    ${last ? lines : html`<text x="${W / 2}" y="${(TOP + BOTTOM) / 2}" text-anchor="middle" fill="#778">no samples yet</text>`}
  </svg>`;
}
