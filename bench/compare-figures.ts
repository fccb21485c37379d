// The figures `npm run bench:compare` reads from each run's raw output, per bench, and the table
// that sets the two sides beside each other: every run's value, each side's median, after ÷ before.
// bench:hosts from its records line (the same arithmetic as its report), bench:claims from its
// JSON line and round-trip rows, bench:dataplane from its per-round lines; other benches give none.
import { againstOne, median } from "./hosts-against-one.ts";
import { type BurstRecord, costMs, lostClaims } from "./hosts-report.ts";

/** Figures are one run's named values, in the order a report lists them. */
export type Figures = Map<string, number>;

/** jsonLine parses the last output line that starts with `prefix` (a bench's machine-readable line). */
function jsonLine<T>(output: string, prefix: string): T | undefined {
  const line = output
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .at(-1);
  return line === undefined ? undefined : (JSON.parse(line) as T);
}

/** hostsFigures: per number of hosts, the medians over the rounds, and against one host (issue #37's measures). */
function hostsFigures(output: string, out: Figures): void {
  const records = jsonLine<BurstRecord[]>(output, '[{"round"') ?? [];
  const configs = [...new Set(records.map((r) => r.hosts))].sort((a, b) => a - b);
  for (const k of configs) {
    const rs = records.filter((r) => r.hosts === k);
    out.set(`${k} host(s): apiserver + hosts ms per sandbox`, median(rs.map(costMs)));
    out.set(`${k} host(s): Running/s`, median(rs.map((r) => r.runningPerSecond)));
  }
  for (const a of againstOne(records, costMs, lostClaims)) {
    out.set(`${a.hosts} hosts ÷ 1 host (goal ≤ 1.2)`, a.ratio);
    out.set(`${a.hosts} hosts: ms per sandbox per added host (goal ≤ 0.5)`, a.addedMs);
    out.set(`${a.hosts} hosts: lost claims per sandbox (goal < 0.1)`, a.lost);
  }
}

interface ClaimsLine {
  exact: { servedPerSecond: number };
  double: { servedPerSecond: number };
  bursts: {
    n: number;
    fast?: boolean;
    served: number[];
    servedPerSecond: number;
    cpuSeconds: Record<string, number>;
  }[];
  barePatchesPerSecond: number;
}

/** claimsFigures: the round trips' p50, each burst's Running/s and CPU per sandbox, the overload ratio. */
function claimsFigures(output: string, out: Figures): void {
  for (const m of output.matchAll(/^\| ([^|]+?) \| ([\d.]+) ms \| [\d.]+ ms \| [\d.]+ ms \|$/gm))
    out.set(`${m[1]}: p50 ms`, Number(m[2]));
  for (const m of output.matchAll(/^\| ((?:swap|fast path)[^|]*?) \| \d+ \| ([\d.]+) ms \|/gm))
    out.set(`create with wait → Running, ${m[1]}: p50 ms`, Number(m[2]));
  const line = jsonLine<ClaimsLine>(output, '{"exact"');
  if (!line) return;
  for (const b of line.bursts) {
    const label = `burst of ${b.n}, ${b.fast ? "fast path" : "swap"}`;
    const per = (process: string) =>
      (1000 * (b.cpuSeconds[process] ?? Number.NaN)) / Math.max(1, b.served.length);
    out.set(`${label}: Running/s`, b.servedPerSecond);
    out.set(`${label}: p50 to Running ms`, median(b.served));
    out.set(`${label}: apiserver ms per sandbox`, per("kube-apiserver"));
    out.set(`${label}: host ms per sandbox`, per("host (Node)"));
  }
  out.set("bare pod PATCH/s", line.barePatchesPerSecond);
  out.set(
    "overload: twice the pool ÷ exact-size rate (goal ≥ 0.8)",
    line.double.servedPerSecond / line.exact.servedPerSecond,
  );
}

/** dataplaneFigures: each figure's median over the run's rounds ("round N: {…}" lines). */
function dataplaneFigures(output: string, out: Figures): void {
  const rounds = [...output.matchAll(/^round \d+: (\{.*\})$/gm)].map(
    (m) => JSON.parse(m[1] as string) as Record<string, number>,
  );
  const names = [...new Set(rounds.flatMap((r) => Object.keys(r)))];
  for (const name of names)
    out.set(name, median(rounds.flatMap((r) => (typeof r[name] === "number" ? [r[name]] : []))));
}

/** figuresOf reads a run's figures from its raw output; a bench it does not know gives none. */
export function figuresOf(bench: string, output: string): Figures {
  const out: Figures = new Map();
  const read = { hosts: hostsFigures, claims: claimsFigures, dataplane: dataplaneFigures }[bench];
  read?.(output, out);
  return out;
}

const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x)
    ? "–"
    : Math.abs(x) >= 100
      ? x.toFixed(0)
      : Math.abs(x) >= 10
        ? x.toFixed(1)
        : x.toFixed(3);

/** compareTable sets each figure's runs, each side's median and after ÷ before beside each other. */
export function compareTable(before: readonly Figures[], after: readonly Figures[]): string {
  const names = [...new Set([...before, ...after].flatMap((m) => [...m.keys()]))];
  const lines = [
    "| figure | before, each run | after, each run | before median | after median | after ÷ before |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const name of names) {
    const values = (side: readonly Figures[]) => side.map((m) => m.get(name) ?? Number.NaN);
    const b = values(before);
    const a = values(after);
    const mb = median(b.filter(Number.isFinite));
    const ma = median(a.filter(Number.isFinite));
    lines.push(
      `| ${name} | ${b.map(f).join(", ")} | ${a.map(f).join(", ")} | ${f(mb)} | ${f(ma)} | ${Number.isFinite(ma / mb) && mb !== 0 ? (ma / mb).toFixed(2) : "–"} |`,
    );
  }
  return lines.join("\n");
}
