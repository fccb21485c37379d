// What `npm run bench:pause` (bench/pause.ts) prints: per size, the medians and p90 of each phase
// a user waits for, the resume against a fresh create of the same run, where a pause's and a
// resume's time goes, the snapshot layers' size, and the raw samples as one JSON line.
import { percentile } from "./support.ts";

/** SIZES are the bytes of changes each sandbox writes before its pause. */
export const SIZES = { "1MiB": 1 << 20, "100MiB": 100 << 20 } as const;
export type Size = keyof typeof SIZES;

/**
 * PauseSample is one sandbox's cycle, in ms from the start of its step (the SDK's clock for what
 * the SDK timed, the bench's for the rest: the pod's and the snapshot's phases as the bench's
 * watches first saw them).
 */
export interface PauseSample {
  size: Size;
  sandboxId: string;
  createMs: number;
  createCommandMs: number;
  writeMs: number;
  pauseMs: number;
  pauseAnsweredMs: number;
  pauseIdleMs: number;
  committingSeenMs: number;
  committedSeenMs: number;
  pausedSeenMs: number;
  agentCommitMs: number | undefined;
  layerBytes: number | undefined;
  resumeConnectMs: number;
  resumeCommandMs: number;
  resumeHashMs: number;
  resumingSeenMs: number;
  resumedSeenMs: number;
  samePod: boolean;
  sha256: string;
}

/** RunInfo is how the run was made, printed with the figures. */
export interface RunInfo {
  rounds: number;
  warmup: number;
  settleMs: number;
  loadAtStart: number[];
  loadAtEnd: number[];
}

type Field = {
  [K in keyof PauseSample]: PauseSample[K] extends number | undefined ? K : never;
}[keyof PauseSample];

const ROWS: [string, Field][] = [
  ["create → answered (201)", "createMs"],
  ["create → a command answered (baseline)", "createCommandMs"],
  ["write the file (files.write)", "writeMs"],
  ["betaPause → answered", "pauseMs"],
  ["betaPause → its pod idle again", "pauseIdleMs"],
  ["  of which: → snapshot seen Committing (host asked)", "committingSeenMs"],
  ["  of which: → seen Committed (agent pushed)", "committedSeenMs"],
  ["  of which: → seen Paused (host released the pod)", "pausedSeenMs"],
  ["  agent's commit (diff, push), as it logged", "agentCommitMs"],
  ["connect (resume) → answered (Running)", "resumeConnectMs"],
  ["  of which: → snapshot seen Resuming", "resumingSeenMs"],
  ["  of which: → seen Resumed (the claim written)", "resumedSeenMs"],
  ["connect (resume) → a command answered", "resumeCommandMs"],
  ["connect (resume) → the file's sha256 in the sandbox", "resumeHashMs"],
];

const values = (xs: PauseSample[], f: Field) =>
  xs.map((s) => s[f]).filter((v): v is number => typeof v === "number" && Number.isFinite(v));
const fmt = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : "–");
const median = (xs: PauseSample[], f: Field) => {
  const v = values(xs, f);
  return v.length ? percentile(v, 50) : Number.NaN;
};

/** report prints the tables, the ratios and the raw samples. */
export function report(samples: PauseSample[], run: RunInfo): void {
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
  console.log(
    `\n## Pause and resume on the real node: ${run.rounds} rounds of each size, interleaved (${run.warmup} warm-up round not counted)\n`,
  );
  console.log(
    `Load average (1, 5, 15 min): ${load(run.loadAtStart)} at the start, ${load(run.loadAtEnd)} at the end.\n`,
  );
  const sizes = Object.keys(SIZES) as Size[];
  console.log(`| step (ms) | ${sizes.map((s) => `${s} p50 | ${s} p90 | ${s} max`).join(" | ")} |`);
  console.log(`| --- |${sizes.map(() => " --- | --- | --- |").join("")}`);
  for (const [label, f] of ROWS) {
    const cells = sizes.map((size) => {
      const v = values(
        samples.filter((s) => s.size === size),
        f,
      );
      return v.length
        ? `${fmt(percentile(v, 50))} | ${fmt(percentile(v, 90))} | ${fmt(Math.max(...v))}`
        : "– | – | –";
    });
    console.log(`| ${label} | ${cells.join(" | ")} |`);
  }
  const all = (f: Field) => median(samples, f);
  console.log("\n| p50 ratio, same run | 1MiB | 100MiB |");
  console.log("| --- | --- | --- |");
  const ratio = (size: Size, f: Field, base: Field) =>
    (
      median(
        samples.filter((s) => s.size === size),
        f,
      ) / all(base)
    ).toFixed(2);
  console.log(
    `| resume → a command answered ÷ create → a command answered (all creates) | ${sizes.map((s) => ratio(s, "resumeCommandMs", "createCommandMs")).join(" | ")} |`,
  );
  console.log(
    `| resume → answered ÷ create → answered | ${sizes.map((s) => ratio(s, "resumeConnectMs", "createMs")).join(" | ")} |`,
  );
  console.log(
    `| pause → answered ÷ create → a command answered | ${sizes.map((s) => ratio(s, "pauseMs", "createCommandMs")).join(" | ")} |`,
  );
  for (const size of sizes) {
    const of = samples.filter((s) => s.size === size);
    const bytes = [...new Set(of.map((s) => s.layerBytes))].join(", ");
    const same = of.filter((s) => s.samePod).length;
    console.log(
      `\n${size}: snapshot layer bytes ${bytes}; resumed on the pod it paused on ${same} of ${of.length} times; every sha256 after the resume matched.`,
    );
  }
  console.log(`\n${JSON.stringify({ ...run, samples })}`);
}
