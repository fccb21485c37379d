// `node bench/cooldown-medians.ts FILE...`: the two cooldown modes side by side over several runs of
// `COOLDOWN_MODES=waiters,strict npm run bench:autoscale` (their raw output, one JSON line per
// scenario). Per growth mode, start and cooldown mode: the median of each figure over the runs;
// then, since the machine is shared and its load moves between runs, the median of the same-run
// ratios strict ÷ waiters (each round of each file compared with itself only; for 503s the
// difference in points). See ADR 0034.
import { readFileSync } from "node:fs";

type Row = Record<string, unknown> & { mode: string; start: number; cooldown?: string; round?: number };

/** FIGURES: the columns, each a JSON field and how it is shown. */
const FIGURES: [label: string, field: string, show: (v: number) => string][] = [
  ["503s", "rate503", (v) => `${(v * 100).toFixed(2)} %`],
  ["p50 → Running", "p50ToRunningMs", (v) => `${v.toFixed(0)} ms`],
  ["p99 → Running", "p99ToRunningMs", (v) => `${v.toFixed(0)} ms`],
  ["first create", "firstCreateMs", (v) => `${v.toFixed(0)} ms`],
  ["unmet → new idle", "unmetToNewIdleMs", (v) => `${v.toFixed(0)} ms`],
  ["idle/busy", "idlePerBusy", (v) => `${(v * 100).toFixed(0)} %`],
  ["idle s per served", "idleSecondsPerServed", (v) => v.toFixed(2)],
  ["shrink back", "shrinkBackS", (v) => `${v.toFixed(1)} s`],
];

/** median of the numbers among xs (the lower middle one for an even count), undefined if none. */
function median(xs: unknown[]): number | undefined {
  const sorted = xs
    .filter((x): x is number => typeof x === "number" && Number.isFinite(x))
    .sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)] : undefined;
}

const rows: (Row & { file: string })[] = [];
for (const file of process.argv.slice(2))
  for (const line of readFileSync(file, "utf8").split("\n"))
    if (line.startsWith("{")) rows.push({ ...(JSON.parse(line) as Row), file });

const scenarios = [...new Set(rows.map((r) => `${r.mode}|${r.start}`))];
const modes = [...new Set(rows.map((r) => r.cooldown ?? "waiters"))];
const header = (first: string) => [
  `| mode | start | ${first} | runs | ${FIGURES.map(([label]) => label).join(" | ")} |`,
  `| --- | --- | --- | --- | ${FIGURES.map(() => "---").join(" | ")} |`,
];

console.log(header("cooldown").join("\n"));
for (const key of scenarios)
  for (const cooldown of modes) {
    const runs = rows.filter((r) => `${r.mode}|${r.start}` === key && (r.cooldown ?? "waiters") === cooldown);
    const cells = FIGURES.map(([, field, show]) => {
      const v = median(runs.map((r) => r[field]));
      return v === undefined ? "–" : show(v);
    });
    console.log(`| ${key.replace("|", " | ")} | ${cooldown} | ${runs.length} | ${cells.join(" | ")} |`);
  }

// Same-run ratios: each strict row against the waiters row of its own file and round.
console.log();
console.log(header("ratio").join("\n"));
for (const key of scenarios) {
  const pairs = rows
    .filter((r) => `${r.mode}|${r.start}` === key && r.cooldown === "strict")
    .flatMap((s) => {
      const w = rows.find(
        (r) =>
          r.file === s.file &&
          r.round === s.round &&
          `${r.mode}|${r.start}` === key &&
          r.cooldown === "waiters",
      );
      return w ? [[s, w] as const] : [];
    });
  // 503s are often 0 in one mode: their column is the difference in points, not a ratio.
  const cells = FIGURES.map(([, field]) => {
    const points = field === "rate503";
    const ratios = pairs.map(([s, w]) => {
      const a = s[field];
      const b = w[field];
      if (typeof a !== "number" || typeof b !== "number") return undefined;
      if (points) return (a - b) * 100;
      return b !== 0 ? a / b : undefined;
    });
    const v = median(ratios);
    if (v === undefined) return "–";
    return points ? `${v >= 0 ? "+" : ""}${v.toFixed(1)} pts` : `× ${v.toFixed(2)}`;
  });
  console.log(`| ${key.replace("|", " | ")} | strict ÷ waiters | ${pairs.length} | ${cells.join(" | ")} |`);
}
