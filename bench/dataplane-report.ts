// The figures of `npm run bench:dataplane`: what one round measured, the figures read from it
// (added latency = router − direct of the same round), and the table of every round, their median
// and the verdict against the targets (read from the median, never from one round).
import { percentile } from "./support.ts";

/** Round is what one round measured, raw. */
export interface Round {
  /** health: ms per GET /health on each side; CPU seconds each process used over the phase. */
  health: {
    router: number[];
    direct: number[];
    cpu: { router: number; routerIdle: number; envd: number; client: number };
  };
  /** sdk: ms per commands.run('true') on each side. */
  sdk: { router: number[]; direct: number[] };
  /** download: bytes per second of each download on each side; CPU seconds over each side's. */
  download: { bytes: number; router: number[]; direct: number[]; cpu: Record<"router" | "direct", CpuUse> };
  /**
   * streams: how many were asked, opened (client) and held at once (server); the router's RSS
   * before (after a GC) and with them open (as is, and after a GC); its heap + external likewise.
   */
  streams: {
    n: number;
    opened: number;
    heldAtOnce: number;
    openSeconds: number;
    rssBefore: number;
    rssOpen: number;
    rssOpenAfterGc: number;
    heapBefore: number;
    heapOpen: number;
  };
}

/** CpuUse is the CPU seconds each process used over a phase, and the phase's wall seconds. */
export interface CpuUse {
  router: number;
  envd: number;
  client: number;
  seconds: number;
}

/** Target is a bound a figure must keep. */
interface Target {
  op: "≤" | "≥" | "=";
  value: number;
}

/**
 * Figure is one row: a name, its value in each round, and maybe a target. first: the summary is
 * round 1's value, not the median (RSS grows once: later rounds reuse the pages round 1 touched).
 */
interface Figure {
  name: string;
  values: number[];
  digits: number;
  target?: Target;
  first?: boolean;
}

/** firstRound marks a figure whose summary is round 1. */
const firstRound = (f: Figure): Figure => ({ ...f, name: `${f.name} [summary: round 1]`, first: true });

const median = (xs: readonly number[]) => percentile(xs, 50);
const MiB = 1024 * 1024;

/** cores is how many cores a phase's processes kept busy on average. */
const cores = (c: CpuUse) => (c.router + c.envd + c.client) / c.seconds;

/** perGiB is each process's CPU seconds per GiB a side's downloads moved. */
function perGiB(r: Round, side: "router" | "direct"): CpuUse {
  const gib = (r.download[side].length * r.download.bytes) / (1024 * MiB);
  const c = r.download.cpu[side];
  return { router: c.router / gib, envd: c.envd / gib, client: c.client / gib, seconds: c.seconds };
}

/** figures reads the rows of the table from the rounds. */
export function figures(rounds: readonly Round[]): Figure[] {
  const row = (name: string, digits: number, f: (r: Round) => number, target?: Target): Figure => ({
    name,
    values: rounds.map(f),
    digits,
    ...(target ? { target } : {}),
  });
  const p = (xs: number[], q: number) => percentile(xs, q);
  /** latency is a request's p50 and p99 on each side, and what the router adds (its targets). */
  const latency = (
    what: string,
    digits: number,
    side: (r: Round) => { router: number[]; direct: number[] },
  ) =>
    [50, 99]
      .flatMap((q) => [
        row(`${what} p${q}, router (ms)`, digits, (r) => p(side(r).router, q)),
        row(`${what} p${q}, direct (ms)`, digits, (r) => p(side(r).direct, q)),
      ])
      .concat(
        (
          [
            [50, 1],
            [99, 5],
          ] as const
        ).map(([q, bound]) =>
          row(`${what} added p${q} (ms)`, digits, (r) => p(side(r).router, q) - p(side(r).direct, q), {
            op: "≤",
            value: bound,
          }),
        ),
      );
  const perRequest = (cpu: number, n: number) => (cpu / n) * 1e6;
  return [
    ...latency("GET /health", 3, (r) => r.health),
    ...latency("commands.run('true')", 2, (r) => r.sdk),
    row("100 MiB download, router (MiB/s)", 0, (r) => median(r.download.router) / MiB),
    row("100 MiB download, direct (MiB/s)", 0, (r) => median(r.download.direct) / MiB),
    row("download router ÷ direct", 2, (r) => median(r.download.router) / median(r.download.direct), {
      op: "≥",
      value: 0.8,
    }),
    row("router CPU per GiB downloaded through it (s)", 2, (r) => perGiB(r, "router").router),
    row("cores busy, router downloads (router + envd + client)", 2, (r) => cores(r.download.cpu.router)),
    row("cores busy, direct downloads (envd + client)", 2, (r) => cores(r.download.cpu.direct)),
    row("streams held open at once (server count)", 0, (r) => r.streams.heldAtOnce, {
      op: "=",
      value: rounds[0]?.streams.n ?? 0,
    }),
    row("streams opened (client count)", 0, (r) => r.streams.opened),
    row("time to open them, 100 at a time (s)", 2, (r) => r.streams.openSeconds),
    row("router RSS before the streams, after GC (MiB)", 1, (r) => r.streams.rssBefore / MiB),
    row("router heap + external before the streams, after GC (MiB)", 1, (r) => r.streams.heapBefore / MiB),
    row("router RSS with them open (MiB)", 1, (r) => r.streams.rssOpen / MiB),
    firstRound(
      row(
        "router RSS growth per stream (KiB)",
        1,
        (r) => (r.streams.rssOpen - r.streams.rssBefore) / r.streams.n / 1024,
      ),
    ),
    firstRound(
      row(
        "router RSS growth per stream, both after GC (KiB)",
        1,
        (r) => (r.streams.rssOpenAfterGc - r.streams.rssBefore) / r.streams.n / 1024,
      ),
    ),
    row(
      "router heap + external growth per stream, after GC (KiB)",
      1,
      (r) => (r.streams.heapOpen - r.streams.heapBefore) / r.streams.n / 1024,
    ),
    row("router CPU per proxied GET /health (µs)", 0, (r) =>
      perRequest(r.health.cpu.router, r.health.router.length),
    ),
    row("… less its idle CPU over the phase (µs)", 0, (r) =>
      perRequest(r.health.cpu.router - r.health.cpu.routerIdle, r.health.router.length),
    ),
    row("envd stand-in CPU per GET /health, both sides (µs)", 0, (r) =>
      perRequest(r.health.cpu.envd, r.health.router.length + r.health.direct.length),
    ),
    row("client CPU per GET /health, both sides (µs)", 0, (r) =>
      perRequest(r.health.cpu.client, r.health.router.length + r.health.direct.length),
    ),
  ];
}

function holds(value: number, t: Target): boolean {
  if (t.op === "≤") return value <= t.value;
  if (t.op === "≥") return value >= t.value;
  return value === t.value;
}

/** table prints every figure's rounds, summary (median), target and verdict as markdown. */
export function table(rows: readonly Figure[]): string {
  const rounds = rows[0]?.values.length ?? 0;
  const head = [
    "figure",
    ...Array.from({ length: rounds }, (_, i) => `round ${i + 1}`),
    "median",
    "target",
    "verdict",
  ];
  const lines = [`| ${head.join(" | ")} |`, `|${" --- |".repeat(head.length)}`];
  for (const f of rows) {
    const m = f.first ? (f.values[0] ?? 0) : median(f.values);
    const fmt = (v: number) => v.toFixed(f.digits);
    const target = f.target ? `${f.target.op} ${f.target.value}` : "";
    const verdict = f.target ? (holds(m, f.target) ? "**pass**" : "**FAIL**") : "";
    lines.push(`| ${[f.name, ...f.values.map(fmt), fmt(m), target, verdict].join(" | ")} |`);
  }
  return lines.join("\n");
}
