// `npm run bench:compare -- <bench> [options]`: one bench run alternately in the baseline (a git
// worktree of --base, default 0d023e2, the last commit before issue #37's changes) and in this
// tree, before, after, before, after … --runs times each, one at a time (a run waits while
// another bench's cluster runs), the environment passed through (BURST, CONFIGS, ROUNDS …). Both
// sides run this tree's bench code (bench/compare-tree.ts). Each run's raw output goes to
// docs/bench-results/<bench>-<tag>-<before|after>-run<N>.txt, and after each run the summary,
// every run's figures, each side's median and after ÷ before, to …/<bench>-<tag>-compare.md.
// See docs/benchmarks.md ("Before and after in one session").
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { compareTable, type Figures, figuresOf } from "./compare-figures.ts";
import { liveClusters, type RunResult, runBench, stopGroup, waitForNoBench } from "./compare-run.ts";
import { type BaselineTree, benchClosure, prepareBaseline } from "./compare-tree.ts";

const USAGE = `npm run bench:compare -- <bench, e.g. hosts> [--runs 3] [--base 0d023e2] [--tag YYYY-MM-DD] [--first before|after]
  [--out docs/bench-results] [--overwrite] [--allow-drift] [--prepare-only] [--wait-minutes 60]`;
const repo = resolve(import.meta.dirname, "..");
const log = (line: string) => console.error(`[compare] ${line}`);
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: "string", default: "3" },
    base: { type: "string", default: "0d023e2" },
    tag: { type: "string", default: new Date().toISOString().slice(0, 10) },
    first: { type: "string", default: "before" },
    overwrite: { type: "boolean", default: false },
    "allow-drift": { type: "boolean", default: false },
    "prepare-only": { type: "boolean", default: false },
    "wait-minutes": { type: "string", default: "60" },
    out: { type: "string", default: "docs/bench-results" },
  },
});
const bench = (positionals[0] ?? "").replace(/^bench:/, "");
const script = (
  JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { scripts: Record<string, string> }
).scripts[`bench:${bench}`];
const entry = /^node (bench\/[\w./-]+\.ts)$/.exec(script ?? "")?.[1];
const runs = Number(values.runs);
if (!entry || !Number.isInteger(runs) || runs < 1 || !["before", "after"].includes(values.first)) {
  console.error(
    `${USAGE}\n(bench:${bench} is ${script ? `"${script}", not "node bench/<file>.ts"` : "not a script"})`,
  );
  process.exit(2);
}

const git = (args: readonly string[]) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
  }).trim();
/** treeState names this tree's code: HEAD, and a hash of its uncommitted changes (others may edit it meanwhile). */
function treeState(): string {
  const untracked = git(["ls-files", "--others", "--exclude-standard"]).split("\n").filter(Boolean);
  const hash = createHash("sha256").update(git(["diff", "HEAD"]));
  for (const file of untracked) hash.update(file).update(readFileSync(join(repo, file)));
  return `${git(["describe", "--always", "--dirty"])} (uncommitted changes ${hash.digest("hex").slice(0, 12)})`;
}
/** benchSettings are the bench settings set in this environment (the names bench/ reads). */
function benchSettings(): string {
  const names = new Set<string>();
  for (const file of readdirSync(join(repo, "bench")).filter((f) => f.endsWith(".ts")))
    for (const m of readFileSync(join(repo, "bench", file), "utf8").matchAll(
      /(?:process\.env\.|setting\(")([A-Z][A-Z0-9_]*)/g,
    ))
      names.add(m[1] as string);
  return [...names]
    .sort()
    .filter((n) => process.env[n] !== undefined)
    .map((n) => `${n}=${process.env[n]}`)
    .join(" ");
}

/** lock makes this the only comparison running from this tree (a stale lock, its process gone, is taken over). */
function lock(): () => void {
  const file = join(repo, ".scratch", "bench-compare.lock");
  mkdirSync(join(repo, ".scratch"), { recursive: true });
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, "utf8"));
    let running = false;
    try {
      process.kill(pid, 0);
      running = true;
    } catch {}
    if (running) throw new Error(`another bench:compare runs (pid ${pid}, ${file})`);
    rmSync(file);
  }
  const fd = openSync(file, "wx");
  writeSync(fd, String(process.pid));
  closeSync(fd);
  return () => rmSync(file, { force: true });
}

const unlock = lock();
let child: number | undefined;
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    stopping = true;
    log(`${signal}: ending the current run, then stopping`);
    if (child !== undefined) stopGroup(child);
  });
try {
  const settings = benchSettings();
  const baseline = prepareBaseline(repo, values.base, log);
  for (const note of baseline.notes) log(`baseline: ${note}`);
  // The bench itself must be this tree's code; a helper it loads that stayed the baseline's is named in the record.
  const closure = benchClosure(repo, entry);
  for (const [file, why] of baseline.kept)
    log(`baseline keeps its own ${file}${closure.has(file) ? " (loaded by this bench)" : ""}: ${why}`);
  if (baseline.kept.has(entry) && !values["allow-drift"])
    throw new Error(
      `the baseline cannot run this tree's ${entry} (${baseline.kept.get(entry)}): not the same bench code (--allow-drift runs its own anyway)`,
    );
  if (values["prepare-only"]) {
    log(`prepared ${baseline.dir}; --prepare-only: no runs`);
  } else await compare(baseline, settings, entry);
} finally {
  unlock();
}

/** drifted is the bench files this bench loads that the baseline ran as its own (and why). */
function drifted(baseline: BaselineTree, entry: string): [string, string][] {
  const closure = benchClosure(repo, entry);
  return [...baseline.kept].filter(([file]) => closure.has(file));
}

/** compare runs the plan (before, after, … or after, before, …) and writes the summary after each run. */
async function compare(baseline: BaselineTree, settings: string, entry: string): Promise<void> {
  const out = resolve(repo, values.out);
  mkdirSync(out, { recursive: true });
  const sides = values.first === "before" ? (["before", "after"] as const) : (["after", "before"] as const);
  const plan = Array.from({ length: runs }, (_, i) => sides.map((side) => ({ side, n: i + 1 }))).flat();
  const fileOf = (side: string, n: number) => join(out, `${bench}-${values.tag}-${side}-run${n}.txt`);
  const summaryFile = join(out, `${bench}-${values.tag}-compare.md`);
  const taken = [...plan.map((p) => fileOf(p.side, p.n)), summaryFile].filter(existsSync);
  if (taken.length > 0 && !values.overwrite)
    throw new Error(`would overwrite ${taken.join(", ")} (another --tag, or --overwrite)`);

  const done: {
    side: string;
    n: number;
    file: string;
    tree: string;
    code: string;
    result: RunResult;
    figures: Figures;
  }[] = [];
  const summarize = () => {
    const ok = (side: string) => done.filter((d) => d.side === side && d.code === "0").map((d) => d.figures);
    const rows = done.map(
      (d) =>
        `| ${d.side} ${d.n} | ${d.tree} | ${relative(repo, d.file)} | ${d.result.startedAt.toISOString().slice(11, 19)} | ${(d.result.seconds / 60).toFixed(1)} | ${d.code} | ${d.result.loadBefore} | ${d.result.others.join(", ") || "none"} |`,
    );
    writeFileSync(
      summaryFile,
      [
        `# bench:${bench}, before (${baseline.commit.slice(0, 7)}) and after (this tree), ${values.tag}\n`,
        `Command: \`${settings} npm run bench:compare -- ${process.argv.slice(2).join(" ")}\``,
        `Both sides ran this tree's bench code; the baseline: ${relative(repo, baseline.dir)}.`,
        ...drifted(baseline, entry).map(
          ([f, why]) => `- **the baseline ran its own ${f}**, not this tree's: ${why}`,
        ),
        ...(drifted(baseline, entry).length > 0
          ? [`- how they differ: ${join(baseline.dir, "bench-kept.diff")}`]
          : []),
        "\n| run | code | raw output | started (UTC) | minutes | exit | load average before | other clusters at the start |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ...rows,
        "\n## Figures (runs that exited 0; each side's median over its runs)\n",
        compareTable(ok("before"), ok("after")),
        "",
      ].join("\n"),
    );
  };
  for (const [i, { side, n }] of plan.entries()) {
    if (stopping) break;
    await waitForNoBench(Number(values["wait-minutes"]), log);
    const file = fileOf(side, n);
    const cwd = side === "before" ? baseline.dir : repo;
    const code = side === "before" ? `baseline ${baseline.commit.slice(0, 7)}` : `this tree ${treeState()}`;
    log(`run ${i + 1}/${plan.length}: ${side} ${n} (${code}) → ${relative(repo, file)}`);
    const result = await runBench(
      {
        cwd,
        entry,
        file,
        prefix: `[${side} ${n}]`,
        header: [
          `${side} run ${n} of bench:${bench}: ${code}, in ${cwd}`,
          `settings: ${settings || "(defaults)"}`,
        ],
        onChild: (pid) => {
          child = pid;
        },
      },
      log,
    );
    const exit = String(result.code ?? result.signal);
    done.push({ side, n, file, tree: code, code: exit, result, figures: figuresOf(bench, result.output) });
    summarize();
    log(
      `${side} ${n}: exit ${exit} after ${(result.seconds / 60).toFixed(1)} min; summary ${relative(repo, summaryFile)}`,
    );
  }
  const left = liveClusters().filter((n) => n.startsWith("bench-"));
  if (left.length > 0) log(`clusters still running: ${left.join(", ")}`);
  console.log(readFileSync(summaryFile, "utf8"));
  process.exitCode = done.every((d) => d.code === "0") && !stopping ? 0 : 1;
}
