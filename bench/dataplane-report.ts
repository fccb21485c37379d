// The figures of `npm run bench:dataplane`: what one round measured, the figures read from it
// (added latency = router − direct of the same round; the control proxy's likewise, beside it),
// and the table of every round, their median and the verdict against the targets (read
// from the median, never from one round). The control's rows have no target: they say what a
// minimal Node proxy gets on the same machine in the same round.
import type { Side } from "./dataplane-measure.ts";
import { percentile } from "./support.ts";

/** Round is what one round measured, raw. */
export interface Round {
  /** health: ms per GET /health on each side; CPU seconds each process used over the phase. */
  health: Record<Side, number[]> & {
    cpu: { router: number; routerIdle: number; envd: number; control: number; client: number };
  };
  /** sdk: ms per commands.run('true') on each side. */
  sdk: { router: number[]; direct: number[] };
  /** download: bytes per second of each download on each side; CPU seconds over each side's. */
  download: Record<Side, number[]> & { bytes: number; cpu: Record<Side, CpuUse> };
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

/**
 * CpuUse is the CPU seconds each process used over a phase, and the phase's wall seconds;
 * routerV8 and controlV8 are the parts of router and control that V8's background threads used.
 */
export interface CpuUse {
  router: number;
  routerV8: number;
  /** host is the Node host's process alone (router is host + the router's process, its default). */
  host: number;
  envd: number;
  control: number;
  controlV8: number;
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
const cores = (c: CpuUse) => (c.router + c.envd + c.control + c.client) / c.seconds;

/**
 * perGiB is a proxy's CPU seconds per GiB its side's downloads moved (the router's, the control's);
 * v8: only its V8 background threads' share.
 */
function perGiB(r: Round, side: "router" | "control", v8 = false): number {
  const gib = (r.download[side].length * r.download.bytes) / (1024 * MiB);
  const cpu = r.download.cpu[side];
  return (v8 ? cpu[`${side}V8`] : cpu[side]) / gib;
}

/** hostPerGiB is the host process's CPU over a side's downloads per GiB they moved. */
function hostPerGiB(r: Round, side: "router" | "control"): number {
  const gib = (r.download[side].length * r.download.bytes) / (1024 * MiB);
  return r.download.cpu[side].host / gib;
}

/** rate is a side's median download in bytes/s, in one round. */
const rate = (r: Round, side: Side) => median(r.download[side]);

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
  const healthRequests = (r: Round) =>
    r.health.router.length + r.health.direct.length + r.health.control.length;
  /** control is the control proxy's /health latency and what it adds over direct (no target). */
  const control = [
    ...[50, 99].map((q) => row(`GET /health p${q}, control (ms)`, 3, (r) => p(r.health.control, q))),
    ...[50, 99].map((q) =>
      row(`GET /health control added p${q} (ms)`, 3, (r) => p(r.health.control, q) - p(r.health.direct, q)),
    ),
  ];
  return [
    ...latency("GET /health", 3, (r) => r.health),
    ...control,
    ...latency("commands.run('true')", 2, (r) => r.sdk),
    row("100 MiB download, router (MiB/s)", 0, (r) => rate(r, "router") / MiB),
    row("100 MiB download, direct (MiB/s)", 0, (r) => rate(r, "direct") / MiB),
    row("100 MiB download, control (MiB/s)", 0, (r) => rate(r, "control") / MiB),
    row("download router ÷ direct", 2, (r) => rate(r, "router") / rate(r, "direct"), { op: "≥", value: 0.8 }),
    row("download router ÷ minimal Node proxy (control)", 2, (r) => rate(r, "router") / rate(r, "control")),
    row("download control ÷ direct", 2, (r) => rate(r, "control") / rate(r, "direct")),
    row("router CPU per GiB downloaded through it (s)", 2, (r) => perGiB(r, "router")),
    row("control CPU per GiB downloaded through it (s)", 2, (r) => perGiB(r, "control")),
    row("… of which V8 background threads (GC), router (s)", 2, (r) => perGiB(r, "router", true)),
    row("… of which the host's process (not the router's) (s)", 2, (r) => hostPerGiB(r, "router")),
    row("host's process CPU per GiB the control moved (s)", 2, (r) => hostPerGiB(r, "control")),
    row("… of which V8 background threads (GC), control (s)", 2, (r) => perGiB(r, "control", true)),
    row("cores busy, router downloads (router + envd + client)", 2, (r) => cores(r.download.cpu.router)),
    row("cores busy, control downloads (control + envd + client)", 2, (r) => cores(r.download.cpu.control)),
    row("cores busy, direct downloads (envd + client)", 2, (r) => cores(r.download.cpu.direct)),
    row("streams held open at once (server count)", 0, (r) => r.streams.heldAtOnce, {
      op: "=",
      value: rounds[0]?.streams.n ?? 0,
    }),
    row("streams opened (client count)", 0, (r) => r.streams.opened),
    row("time to open them, 100 at a time (s)", 2, (r) => r.streams.openSeconds),
    row("router RSS before the streams, after GC (MiB)", 1, (r) => r.streams.rssBefore / MiB),
    row(
      "host main thread heap + external before the streams, after GC (MiB)",
      1,
      (r) => r.streams.heapBefore / MiB,
    ),
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
      "host main thread heap + external growth per stream, after GC (KiB)",
      1,
      (r) => (r.streams.heapOpen - r.streams.heapBefore) / r.streams.n / 1024,
    ),
    row("router CPU per proxied GET /health (µs)", 0, (r) =>
      perRequest(r.health.cpu.router, r.health.router.length),
    ),
    row("… less its idle CPU over the phase (µs)", 0, (r) =>
      perRequest(r.health.cpu.router - r.health.cpu.routerIdle, r.health.router.length),
    ),
    row("control CPU per proxied GET /health (µs)", 0, (r) =>
      perRequest(r.health.cpu.control, r.health.control.length),
    ),
    row("envd stand-in CPU per GET /health, all sides (µs)", 0, (r) =>
      perRequest(r.health.cpu.envd, healthRequests(r)),
    ),
    row("client CPU per GET /health, all sides (µs)", 0, (r) =>
      perRequest(r.health.cpu.client, healthRequests(r)),
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
