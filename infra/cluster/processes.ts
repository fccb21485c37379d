import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { StopWaiting, waitFor } from "./http.ts";

/**
 * Started is a process startDetached ran: its pid, and how it ended once it has (the exit code,
 * or the signal that ended it), as this process saw it.
 */
export interface Started {
  pid: number;
  ended(): string | undefined;
}

/**
 * startDetached runs a control-plane binary in its own process group with stdout/stderr in a
 * log file, so it outlives the `cluster up` command and `down` can stop exactly it. Whether it
 * still runs comes from its own exit event, which also says how it ended (code or signal): the
 * old check, "its /proc command line names our state directory", could only say "gone", and a
 * first run on a fresh machine failed with exactly that and an empty log (issue #13).
 */
export function startDetached(bin: string, args: string[], log: string, env?: NodeJS.ProcessEnv): Started {
  const fd = openSync(log, "a");
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", fd, fd], env: env ?? process.env });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${bin}`);
  let ended: string | undefined;
  child.once("exit", (code, signal) => {
    ended = signal ? `signal ${signal}` : `code ${code}`;
  });
  child.once("error", (e) => {
    ended ??= `error ${e.message}`;
  });
  child.unref();
  return { pid: child.pid, ended: () => ended };
}

/**
 * waitWhileRunning waits for check while every started process runs, so a component that dies
 * fails the wait at once, with its exit code or signal and the tail of its log, rather than as a
 * bare timeout; a slow one is waited for until timeoutMs.
 */
export async function waitWhileRunning(
  what: string,
  processes: readonly { name: string; log: string; started: Started }[],
  check: () => Promise<boolean>,
  timeoutMs = 120_000,
): Promise<void> {
  await waitFor(what, timeoutMs, async () => {
    for (const p of processes) {
      const ended = p.started.ended();
      if (ended === undefined) continue;
      const tail = existsSync(p.log) ? readFileSync(p.log, "utf8").split("\n").slice(-15).join("\n") : "";
      throw new StopWaiting(
        `${p.name} exited (${ended}) while waiting for ${what}; last log lines:\n${tail || "(the log is empty)"}`,
      );
    }
    return check();
  });
}

/** isOurs reports whether pid is alive and its command line mentions marker (our state dir). */
export function isOurs(pid: number, marker: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    return cmdline.includes(marker);
  } catch {
    return false;
  }
}

/** alive says whether a process with this pid runs (signal 0 checks without sending one). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * stopProcess sends SIGTERM, waits up to graceMs, then SIGKILL. It only signals a pid whose
 * command line still carries marker, so a recycled pid is never hit.
 */
export async function stopProcess(pid: number, marker: string, graceMs = 10_000): Promise<void> {
  if (!isOurs(pid, marker)) return;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (alive(pid) && isOurs(pid, marker) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  if (alive(pid) && isOurs(pid, marker)) process.kill(pid, "SIGKILL");
}
