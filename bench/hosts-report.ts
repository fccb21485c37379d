// The tables of `npm run bench:hosts`: every burst, then per number of hosts the medians over the
// rounds, each ratio taken against the one-host burst of the same round, and the verdicts against
// issue #25's goals (3 hosts at most 1.2× one host's CPU per sandbox, lost claims under 0.1) and
// issue #37's (each added host at most 0.5 ms per sandbox, per round and on the median).
import { againstOne, againstOneTable, median, verdicts } from "./hosts-against-one.ts";

/** BurstRecord is one burst of creates with wait through `hosts` hosts, and what it cost. */
export interface BurstRecord {
  round: number;
  /** position: where the burst came in its round (1: first). */
  position: number;
  hosts: number;
  creates: number;
  running: number;
  refused: number;
  /** refusals: what the 503s said (each text once, at most 3). */
  refusals: string[];
  lastRunningMs: number;
  runningPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** cpu: CPU seconds over the burst per process ("host 0" …, "kube-apiserver", "load generator" …). */
  cpu: Record<string, number>;
  /** rest: CPU seconds per process over `seconds` at rest just before the burst (same hosts). */
  rest: { seconds: number; cpu: Record<string, number> };
  /** otherCpu: CPU seconds the machine spent outside the bench's processes meanwhile. */
  otherCpu: number;
  seconds: number;
  load: { before: string; after: string };
  /** settleSeconds: from the burst's end until its sandboxes were released and the pool all idle again. */
  settleSeconds: number;
  /** conflicts: the hosts' preconditioned writes that lost, summed, by "verb resource → transition". */
  conflicts: Record<string, number>;
  /** hostRequests: each host's apiserver requests over the burst. */
  hostRequests: number[];
  /** hostVerbs: the hosts' apiserver requests, summed, by "verb resource". */
  hostVerbs: Record<string, number>;
  /** apiserverConflicts: the 409 and 422 answers the apiserver counted (all clients). */
  apiserverConflicts: Record<string, number>;
  /** requests: the apiserver's requests per create (round 1 only; empty otherwise). */
  requests: string;
}

/** LOST_CLAIM is a claim that lost: a pod patch to "starting" refused for its precondition. */
const LOST_CLAIM = "patch pods → starting";

const perSandbox = (r: BurstRecord, seconds: number) => (1000 * seconds) / Math.max(1, r.running);
const hostNames = (r: BurstRecord) => Object.keys(r.cpu).filter((k) => k.startsWith("host "));
/** hostsMs: all hosts' CPU per sandbox Running (ms). */
export const hostsMs = (r: BurstRecord) =>
  perSandbox(
    r,
    hostNames(r).reduce((a, k) => a + (r.cpu[k] ?? 0), 0),
  );
const apiserverMs = (r: BurstRecord) => perSandbox(r, r.cpu["kube-apiserver"] ?? 0);
/** costMs is the goal's measure: (apiserver + all hosts) CPU per sandbox Running, in ms. */
export const costMs = (r: BurstRecord) => apiserverMs(r) + hostsMs(r);
/** lostClaims is r's claims that lost, per sandbox Running. */
export const lostClaims = (r: BurstRecord) => (r.conflicts[LOST_CLAIM] ?? 0) / Math.max(1, r.running);
const otherConflicts = (r: BurstRecord) =>
  Object.entries(r.conflicts).reduce((a, [k, v]) => a + (k === LOST_CLAIM ? 0 : v), 0) /
  Math.max(1, r.running);
const clusterMs = (r: BurstRecord) =>
  perSandbox(
    r,
    (r.cpu.etcd ?? 0) +
      (r.cpu.kwok ?? 0) +
      (r.cpu["kube-controller-manager"] ?? 0) +
      (r.cpu["kube-scheduler"] ?? 0),
  );
const otherShare = (r: BurstRecord) => (100 * r.otherCpu) / (2 * r.seconds);
const f = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "–");

/** sameRound is the burst of `hosts` hosts in r's round. */
const sameRound = (records: readonly BurstRecord[], r: BurstRecord, hosts: number) =>
  records.find((x) => x.round === r.round && x.hosts === hosts);

function burstTable(records: readonly BurstRecord[]): string {
  const lines = [
    "| round.order | hosts | Running / 503 | Running/s | p50 / p99 to Running | apiserver ms/sandbox | hosts ms/sandbox (each) | apiserver + hosts | lost claims/sandbox | other lost writes/sandbox | host requests/sandbox | etcd+kwok+kcm+sched ms | load generator ms | other work on the machine | load avg before → after | released, all idle again in |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of records) {
    const each = hostNames(r).map((k) => f(perSandbox(r, r.cpu[k] ?? 0)));
    const requests = r.hostRequests.reduce((a, v) => a + v, 0) / Math.max(1, r.running);
    lines.push(
      `| ${r.round}.${r.position} | ${r.hosts} | ${r.running} / ${r.refused} | ${f(r.runningPerSecond, 0)} | ${f(r.p50Ms / 1000, 2)} / ${f(r.p99Ms / 1000, 2)} s | ${f(apiserverMs(r))} | ${f(hostsMs(r))} (${each.join(" / ")}) | ${f(costMs(r))} | ${f(lostClaims(r), 3)} | ${f(otherConflicts(r), 3)} | ${f(requests, 2)} | ${f(clusterMs(r))} | ${f(perSandbox(r, r.cpu["load generator"] ?? 0))} | ${f(otherShare(r), 0)} % of 2 cores | ${r.load.before} → ${r.load.after} | ${f(r.settleSeconds)} s |`,
    );
  }
  return lines.join("\n");
}

function summaryTable(records: readonly BurstRecord[], configs: number[]): string {
  const lines = [
    "| hosts | bursts | Running/s | ÷ 1 host | p50 to Running | apiserver ms/sandbox | hosts ms/sandbox | apiserver + hosts | ÷ 1 host (goal ≤ 1.2) | lost claims/sandbox (goal < 0.1) | other lost writes/sandbox | other work on the machine |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const k of configs) {
    const rs = records.filter((r) => r.hosts === k);
    const ratio = (pick: (r: BurstRecord) => number) =>
      median(
        rs.flatMap((r) => {
          const one = sameRound(records, r, 1);
          return one ? [pick(r) / pick(one)] : [];
        }),
      );
    const m = (pick: (r: BurstRecord) => number) => median(rs.map(pick));
    lines.push(
      `| ${k} | ${rs.length} | ${f(
        m((r) => r.runningPerSecond),
        0,
      )} | ${f(
        ratio((r) => r.runningPerSecond),
        2,
      )} | ${f(m((r) => r.p50Ms) / 1000, 2)} s | ${f(m(apiserverMs))} | ${f(m(hostsMs))} | ${f(m(costMs))} | ${f(ratio(costMs), 2)} | ${f(m(lostClaims), 3)} (max ${f(Math.max(...rs.map(lostClaims)), 3)}) | ${f(m(otherConflicts), 3)} | ${f(m(otherShare), 0)} % |`,
    );
  }
  return lines.join("\n");
}

/** restRate is the CPU seconds per second the picked processes used at rest before r. */
const restRate = (r: BurstRecord, names: readonly string[]) =>
  names.reduce((a, k) => a + (r.rest.cpu[k] ?? 0), 0) / r.rest.seconds;
/** netMs is the picked processes' CPU per sandbox over the burst less what they use at rest. */
const netMs = (r: BurstRecord, names: readonly string[]) =>
  perSandbox(r, names.reduce((a, k) => a + (r.cpu[k] ?? 0), 0) - restRate(r, names) * r.seconds);
const APISERVER = ["kube-apiserver"];

function restTable(records: readonly BurstRecord[], configs: number[]): string {
  const lines = [
    "| hosts | at rest: apiserver CPU s/s | at rest: hosts CPU s/s (each) | burst less rest: apiserver ms/sandbox | less rest: hosts ms/sandbox | less rest: apiserver + hosts | ÷ 1 host |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  const net = (r: BurstRecord) => netMs(r, [...APISERVER, ...hostNames(r)]);
  for (const k of configs) {
    const rs = records.filter((r) => r.hosts === k);
    const m = (pick: (r: BurstRecord) => number) => median(rs.map(pick));
    const each = Array.from({ length: k }, (_, i) =>
      f(
        m((r) => restRate(r, [`host ${i}`])),
        3,
      ),
    );
    const ratios = rs.flatMap((r) => {
      const one = sameRound(records, r, 1);
      return one ? [net(r) / net(one)] : [];
    });
    lines.push(
      `| ${k} | ${f(
        m((r) => restRate(r, APISERVER)),
        3,
      )} | ${f(
        m((r) => restRate(r, hostNames(r))),
        3,
      )} (${each.join(" / ")}) | ${f(m((r) => netMs(r, APISERVER)))} | ${f(m((r) => netMs(r, hostNames(r))))} | ${f(m(net))} | ${f(median(ratios), 2)} |`,
    );
  }
  return lines.join("\n");
}

/** countsPerSandbox prints a counter of every burst per number of hosts, summed over the rounds, per sandbox. */
function countsPerSandbox(
  title: string,
  records: readonly BurstRecord[],
  configs: number[],
  pick: (r: BurstRecord) => Record<string, number>,
): string {
  const keys = [...new Set(records.flatMap((r) => Object.keys(pick(r))))].sort();
  const lines = [
    `| ${title} | ${configs.map((k) => `${k} host(s)`).join(" | ")} |`,
    `| --- |${" --- |".repeat(configs.length)}`,
  ];
  for (const key of keys) {
    const cells = configs.map((k) => {
      const rs = records.filter((r) => r.hosts === k);
      const n = rs.reduce((a, r) => a + (pick(r)[key] ?? 0), 0);
      return f(
        n /
          Math.max(
            1,
            rs.reduce((a, r) => a + r.running, 0),
          ),
        3,
      );
    });
    if (cells.some((c) => Number(c) > 0)) lines.push(`| ${key} | ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

/** report is the whole output of a run: bursts, medians, verdicts, counters, raw records (JSON). */
export function report(records: readonly BurstRecord[]): string {
  const configs = [...new Set(records.map((r) => r.hosts))].sort((a, b) => a - b);
  const most = configs.at(-1) ?? 1;
  const ratios = records
    .filter((r) => r.hosts === most)
    .flatMap((r) => {
      const one = sameRound(records, r, 1);
      return one ? [costMs(r) / costMs(one)] : [];
    });
  const lost = records.filter((r) => r.hosts === most).map(lostClaims);
  const rows = againstOne(records, costMs, lostClaims);
  const verdict = (ok: boolean) => (ok ? "met" : "not met");
  return [
    "## Every burst (in the order run)\n",
    burstTable(records),
    ...records
      .filter((r) => r.refused > 0)
      .map((r) => `\n${r.round}.${r.position}: the 503s said ${r.refusals.join(" | ")}`),
    "\n## Medians over the rounds (each ratio against the one-host burst of the same round)\n",
    summaryTable(records, configs),
    `\n${most} hosts, (apiserver + hosts) CPU per sandbox ÷ one host's, per round: ${ratios.map((x) => f(x, 2)).join(", ")}; median ${f(median(ratios), 2)} (goal ≤ 1.2: ${verdict(median(ratios) <= 1.2)}).`,
    `${most} hosts, lost claims per sandbox, per round: ${lost.map((x) => f(x, 3)).join(", ")}; median ${f(median(lost), 3)} (goal < 0.1: ${verdict(median(lost) < 0.1)}).`,
    "\n## Against one host, per round: N ÷ 1 host and (total(N) − total(1)) / (N − 1), apiserver + hosts\n",
    againstOneTable(rows),
    `\n${verdicts(rows)}`,
    `\n## At rest (${records[0]?.rest.seconds ?? 0} s before each burst), and the bursts less that rate (medians)\n`,
    restTable(records, configs),
    "\n## The hosts' writes that lost, per sandbox (all rounds)\n",
    countsPerSandbox("verb resource → transition", records, configs, (r) => r.conflicts),
    "\n## 409 and 422 answers the apiserver counted (every client), per sandbox\n",
    countsPerSandbox("verb resource code", records, configs, (r) => r.apiserverConflicts),
    "\n## The hosts' apiserver requests, per sandbox (all rounds)\n",
    countsPerSandbox("verb resource", records, configs, (r) => r.hostVerbs),
    ...records.filter((r) => r.requests).map((r) => `\n${r.requests}`),
    `\n${JSON.stringify(records.map(({ requests: _, ...r }) => r))}`,
  ].join("\n");
}
