// `node bench/autoscale-medians.ts FILE...`: the median of each figure over several runs of
// `npm run bench:autoscale` (their raw output, one JSON line per scenario), per mode and start, as
// the table docs/benchmarks.md shows. Verdicts come from these medians, never from one run.
import { readFileSync } from "node:fs";

type Row = Record<string, unknown> & { mode: string; start: number };

const rows = new Map<string, Row[]>();
for (const file of process.argv.slice(2))
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.startsWith("{")) continue;
    const row = JSON.parse(line) as Row;
    const key = `${row.mode}|${row.start}`;
    rows.set(key, [...(rows.get(key) ?? []), row]);
  }

/** median of the numbers among xs (the lower middle one for an even count), undefined if none. */
function median(xs: unknown[]): number | undefined {
  const sorted = xs.filter((x): x is number => typeof x === "number").sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)] : undefined;
}

const f = (v: number | undefined, digits = 0) => (v === undefined ? "–" : v.toFixed(digits));
console.log(
  "| mode | start | runs | creates | 503s | p50 → Running | p99 → Running | first create | unmet → new idle | idle/busy | shrink back |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const [key, runs] of rows) {
  const [mode, start] = key.split("|");
  const m = (field: string) => median(runs.map((r) => r[field]));
  const pct = (field: string) => {
    const v = m(field);
    return v === undefined ? undefined : v * 100;
  };
  console.log(
    `| ${mode} | ${start} | ${runs.length} | ${f(m("creates"))} | ${f(pct("rate503"), 2)} % | ${f(m("p50ToRunningMs"))} ms | ${f(m("p99ToRunningMs"))} ms | ${f(m("firstCreateMs"))} ms | ${f(m("unmetToNewIdleMs"))} ms | ${f(pct("idlePerBusy"))} % | ${f(m("shrinkBackS"), 1)} s |`,
  );
}
