import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";

/**
 * startDetached runs a control-plane binary in its own process group with stdout/stderr in a
 * log file, so it outlives the `cluster up` command and `down` can stop exactly it.
 */
export function startDetached(bin: string, args: string[], log: string, env?: NodeJS.ProcessEnv): number {
  const fd = openSync(log, "a");
  const child = spawn(bin, args, { detached: true, stdio: ["ignore", fd, fd], env: env ?? process.env });
  if (child.pid === undefined) throw new Error(`could not start ${bin}`);
  child.unref();
  return child.pid;
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

function alive(pid: number): boolean {
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
