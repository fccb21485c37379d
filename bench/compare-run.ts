// One run of `npm run bench:compare`: a bench started in one tree (the baseline's worktree or this
// one), its stdout and stderr written to one raw file in the order they come, with the machine's
// state before and after, its progress lines echoed here; and the local clusters around it, so
// that two benches never run at once and a run that died leaves no cluster behind.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { down } from "../infra/cluster/down.ts";
import { isOurs } from "../infra/cluster/processes.ts";
import { clusterDir, readState } from "../infra/cluster/state.ts";
import { loadAverage } from "./hosts-machine.ts";

/** liveClusters names the local clusters (infra/cluster) whose processes still run: benches', tests', anyone's. */
export function liveClusters(): string[] {
  const root = dirname(clusterDir("probe"));
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((name) => {
    try {
      const state = readState(name);
      return state?.processes.some((p) => isOurs(p.pid, state.dir)) ?? false;
    } catch {
      return false; // a state file being written, or not a cluster's
    }
  });
}

/**
 * waitForNoBench waits until no other bench's cluster (named "bench-…") runs, so two benches
 * never share the machine; a test's cluster ("test-…") is named in the run's record instead.
 */
export async function waitForNoBench(minutes: number, log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + minutes * 60_000;
  let said = "";
  for (;;) {
    const benches = liveClusters().filter((n) => n.startsWith("bench-"));
    if (benches.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `another bench's cluster still runs after ${minutes} min: ${benches.join(", ")} (a leftover? \`npm run cluster -- down --name <name>\`)`,
      );
    if (said !== benches.join()) log(`waiting for another bench's cluster to end: ${benches.join(", ")}`);
    said = benches.join();
    await new Promise((r) => setTimeout(r, 10_000));
  }
}

/** stopGroup sends SIGTERM to the process group a bench leads (runBench starts each in its own); none left is fine. */
export function stopGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGTERM");
  } catch {}
}

/** RunResult is how one run ended and how long it took. */
export interface RunResult {
  code: number | null;
  signal: string | null;
  startedAt: Date;
  seconds: number;
  loadBefore: string;
  /** others: the local clusters that ran when it started (another's tests: not a quiet run). */
  others: string[];
  /** output: the raw file's text (header and footer included). */
  output: string;
}

/** RunSpec is one run: which tree, which bench file, where its raw output goes, and the header lines. */
export interface RunSpec {
  cwd: string;
  entry: string;
  file: string;
  header: readonly string[];
  /** prefix: what the echoed progress lines start with ("[before 1]"). */
  prefix: string;
  /**
   * onChild: the bench's process group (its pid) once started, undefined once ended, so a signal
   * to the runner can end the bench and the hosts it forked (stopGroup).
   */
  onChild?: (pid: number | undefined) => void;
}

/**
 * runBench runs `node <entry>` in spec.cwd with this process's environment, writes its output to
 * spec.file, echoes its stderr lines (the benches' progress), and afterwards stops a cluster the
 * bench left (its name ends with the bench's pid: it was killed before its own `down`).
 */
export async function runBench(spec: RunSpec, log: (line: string) => void): Promise<RunResult> {
  const fd = openSync(spec.file, "w");
  const write = (data: string | Buffer) =>
    void (typeof data === "string" ? writeSync(fd, data) : writeSync(fd, data));
  const startedAt = new Date();
  const loadBefore = loadAverage();
  const others = liveClusters();
  for (const line of spec.header) write(`# ${line}\n`);
  write(`# started ${startedAt.toISOString()}, load average ${loadBefore}\n`);
  write(`# other clusters running: ${others.join(", ") || "none"}\n\n`);
  // A group of its own: the hosts it forks are in it, the cluster's processes (detached) are not.
  const child = spawn(process.execPath, [spec.entry], {
    cwd: spec.cwd,
    env: process.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  spec.onChild?.(child.pid);
  child.stdout.on("data", (b: Buffer) => write(b));
  // The raw bytes to the file; the echo decoded across chunks (a chunk may end inside a character).
  const decoder = new StringDecoder("utf8");
  let partial = "";
  child.stderr.on("data", (b: Buffer) => {
    write(b);
    const lines = (partial + decoder.write(b)).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) log(`${spec.prefix} ${line}`);
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.once("exit", (c, s) => resolve([c, s])),
  );
  spec.onChild?.(undefined);
  // Hosts it forked outlive a bench that was killed (they hold its output open): end them too.
  if (child.pid !== undefined) stopGroup(child.pid);
  await Promise.race([closed, new Promise((r) => setTimeout(r, 10_000).unref())]);
  child.stdout.destroy();
  child.stderr.destroy();
  const seconds = (Date.now() - startedAt.getTime()) / 1000;
  write(
    `\n# ended ${new Date().toISOString()} after ${(seconds / 60).toFixed(1)} min, exit ${code ?? signal}, load average ${loadAverage()}\n`,
  );
  closeSync(fd);
  const left = liveClusters().filter((n) => child.pid !== undefined && n.endsWith(`-${child.pid}`));
  for (const name of left) {
    log(`${spec.prefix} stopping the cluster ${name} the bench left`);
    await down(name, () => {});
  }
  return { code, signal, startedAt, seconds, loadBefore, others, output: readFileSync(spec.file, "utf8") };
}
