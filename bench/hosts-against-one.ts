// What each configuration of `npm run bench:hosts` costs against one host (issue #37's goals):
// per round, N hosts' (apiserver + hosts) CPU per sandbox ÷ the one-host burst's of the same
// round, and what each added host cost, (total(N) − total(1)) / (N − 1) ms per sandbox; then the
// medians over the rounds. Also which numbers of hosts a run measures (CONFIGS).
import { percentile } from "./support.ts";

/** GOALS are issue #37's: each added host ≤ 0.5 ms per sandbox, N hosts ≤ 1.2× one, lost claims < 0.1. */
export const GOALS = { addedMs: 0.5, ratio: 1.2, lostClaims: 0.1 };

/**
 * hostConfigs is the numbers of hosts a run measures: CONFIGS ("1,3,5"; blanks and repeats
 * ignored, sorted, so rounds rotate 1-3-5, 3-5-1, 5-1-3), or 1 … hosts when CONFIGS is unset.
 */
export function hostConfigs(configs: string | undefined, hosts: number): number[] {
  if (configs === undefined || configs.trim() === "") return Array.from({ length: hosts }, (_, i) => i + 1);
  const out = [
    ...new Set(
      configs
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
        .map(Number),
    ),
  ];
  const bad = out.filter((k) => !Number.isInteger(k) || k < 1);
  if (bad.length > 0 || out.length === 0)
    throw new Error(`CONFIGS=${configs}: want numbers of hosts ≥ 1, e.g. 1,3,5`);
  return out.sort((a, b) => a - b);
}

/** Burst is what this module needs of a burst record: its round and number of hosts. */
export interface Burst {
  round: number;
  hosts: number;
}

/** RoundAgainstOne is one round's N-host burst beside the one-host burst of the same round. */
export interface RoundAgainstOne {
  round: number;
  /** ratio: N hosts' cost per sandbox ÷ one host's. */
  ratio: number;
  /** addedMs: (cost(N) − cost(1)) / (N − 1), ms per sandbox per added host. */
  addedMs: number;
  /** lost: lost claims per sandbox of the N-host burst. */
  lost: number;
}

/** AgainstOne is one number of hosts (N > 1): every round with a one-host burst, and their medians. */
export interface AgainstOne {
  hosts: number;
  rounds: RoundAgainstOne[];
  ratio: number;
  addedMs: number;
  lost: number;
}

/**
 * median is the value at half the sorted list (the upper of two middles, as every bench table
 * here takes it); NaN for none, so a missing figure prints "–" instead of 0.
 */
export const median = (xs: readonly number[]) => (xs.length === 0 ? Number.NaN : percentile(xs, 50));

/**
 * againstOne gives, for each number of hosts above one that `records` hold, each round's ratio,
 * added-host cost and lost claims against the one-host burst of the same round (`cost` in ms per
 * sandbox, `lost` per sandbox), and their medians. A round without a one-host burst is left out.
 */
export function againstOne<R extends Burst>(
  records: readonly R[],
  cost: (r: R) => number,
  lost: (r: R) => number,
): AgainstOne[] {
  const configs = [...new Set(records.map((r) => r.hosts))].filter((k) => k > 1).sort((a, b) => a - b);
  return configs.map((hosts) => {
    const rounds = records
      .filter((r) => r.hosts === hosts)
      .flatMap((r) => {
        const one = records.find((x) => x.round === r.round && x.hosts === 1);
        if (!one) return [];
        const ratio = cost(r) / cost(one);
        return [{ round: r.round, ratio, addedMs: (cost(r) - cost(one)) / (hosts - 1), lost: lost(r) }];
      });
    const m = (pick: (x: RoundAgainstOne) => number) => median(rounds.map(pick));
    return { hosts, rounds, ratio: m((x) => x.ratio), addedMs: m((x) => x.addedMs), lost: m((x) => x.lost) };
  });
}

const f = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : "–");

/** againstOneTable prints againstOne's figures, a row per number of hosts, with each round's values. */
export function againstOneTable(rows: readonly AgainstOne[]): string {
  const lines = [
    `| hosts | rounds | ÷ 1 host, per round | median (goal ≤ ${GOALS.ratio}) | ms per sandbox per added host, per round | median (goal ≤ ${GOALS.addedMs}) | lost claims per sandbox, per round | median (goal < ${GOALS.lostClaims}) |`,
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const a of rows) {
    const each = (pick: (x: RoundAgainstOne) => number, digits: number) =>
      a.rounds.map((x) => f(pick(x), digits)).join(", ") || "–";
    lines.push(
      `| ${a.hosts} | ${a.rounds.map((x) => x.round).join(", ") || "– (no one-host burst)"} | ${each((x) => x.ratio, 2)} | **${f(a.ratio, 2)}** | ${each((x) => x.addedMs, 2)} | **${f(a.addedMs, 2)}** | ${each((x) => x.lost, 3)} | **${f(a.lost, 3)}** |`,
    );
  }
  return lines.join("\n");
}

/** verdicts says, for the most hosts measured, whether each of issue #37's goals is met on the medians. */
export function verdicts(rows: readonly AgainstOne[]): string {
  const most = rows.at(-1);
  if (!most) return "No configuration above one host with a one-host burst in the same round: no verdict.";
  const v = (ok: boolean) => (ok ? "met" : "not met");
  return [
    `${most.hosts} hosts against one, medians over ${most.rounds.length} round(s):`,
    `each added host ${f(most.addedMs, 2)} ms per sandbox (goal ≤ ${GOALS.addedMs}: ${v(most.addedMs <= GOALS.addedMs)}),`,
    `${f(most.ratio, 2)}× one host (goal ≤ ${GOALS.ratio}: ${v(most.ratio <= GOALS.ratio)}),`,
    `lost claims ${f(most.lost, 3)} per sandbox (goal < ${GOALS.lostClaims}: ${v(most.lost < GOALS.lostClaims)}).`,
  ].join(" ");
}
