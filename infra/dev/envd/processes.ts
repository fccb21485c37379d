/**
 * processes.ts is one sandbox's process table: commands run for real, each in its own process
 * group (so a signal or a reset reaches everything it spawned), output fanned out to whoever is
 * attached (Start's stream, later Connects) and dropped when nobody is, as envd does. The table
 * is bounded; `killAll` ends everything when the pod gets a new sandbox or the server stops.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { RpcError } from "./connect.ts";
import { endEvent, type ProcessConfig, type ProcessEvent, type ProcessSelector } from "./messages.ts";

/** Proc is one running process of the sandbox. */
export interface Proc {
  pid: number;
  tag?: string;
  config: ProcessConfig;
  pty: boolean;
  child: ChildProcess;
  subscribers: Set<(ev: ProcessEvent) => void>;
}

/** StartOptions is a Start request, its cwd and environment already resolved. */
export interface StartOptions {
  config: ProcessConfig;
  tag?: string;
  stdin: boolean;
  pty: boolean;
  cwd: string;
  env: Record<string, string>;
  /** timeoutMs kills the process after this long (0 or absent: never), as envd's request timeout does. */
  timeoutMs?: number;
}

/** quote quotes one word for /bin/sh. */
function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** ProcessTable holds the running processes of one sandbox. */
export class ProcessTable {
  readonly procs = new Map<number, Proc>();
  readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }

  /** start spawns a process; the caller subscribes before it yields to the event loop. */
  start(opts: StartOptions): Proc {
    if (this.procs.size >= this.limit)
      throw new RpcError("resource_exhausted", `at most ${this.limit} processes per sandbox`);
    if (opts.tag !== undefined && this.byTag(opts.tag))
      throw new RpcError("already_exists", `a process with tag '${opts.tag}' is running`);
    // A PTY is given by script(1), which runs the command on a pseudo-terminal and copies it.
    const [file, args] = opts.pty
      ? [
          "script",
          ["-q", "-f", "-e", "-c", [opts.config.cmd, ...opts.config.args].map(quote).join(" "), "/dev/null"],
        ]
      : [opts.config.cmd, opts.config.args];
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: [opts.stdin || opts.pty ? "pipe" : "ignore", "pipe", "pipe"],
    });
    const pid = child.pid;
    if (pid === undefined) {
      child.on("error", () => {});
      throw new RpcError("invalid_argument", `cannot start '${opts.config.cmd}'`);
    }
    const proc: Proc = {
      pid,
      ...(opts.tag !== undefined ? { tag: opts.tag } : {}),
      config: opts.config,
      pty: opts.pty,
      child,
      subscribers: new Set(),
    };
    this.procs.set(pid, proc);
    const emit = (ev: ProcessEvent) => {
      for (const s of proc.subscribers) s(ev);
    };
    child.stdout?.on("data", (c: Buffer) =>
      emit({ data: opts.pty ? { pty: c.toString("base64") } : { stdout: c.toString("base64") } }),
    );
    child.stderr?.on("data", (c: Buffer) => emit({ data: { stderr: c.toString("base64") } }));
    child.stdin?.on("error", () => {});
    const timer = opts.timeoutMs ? setTimeout(() => signalGroup(proc, "SIGKILL"), opts.timeoutMs) : undefined;
    timer?.unref();
    child.on("error", () => {});
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      this.procs.delete(pid);
      emit(endEvent(code, signal));
      proc.subscribers.clear();
    });
    return proc;
  }

  private byTag(tag: string): Proc | undefined {
    for (const p of this.procs.values()) if (p.tag === tag) return p;
    return undefined;
  }

  /** find is the running process a selector names, or not_found. */
  find(sel: ProcessSelector): Proc {
    const p = "pid" in sel ? this.procs.get(sel.pid) : this.byTag(sel.tag);
    if (!p)
      throw new RpcError("not_found", `process ${"pid" in sel ? sel.pid : `tagged '${sel.tag}'`} not found`);
    return p;
  }

  /** signal sends a signal to the process's group. */
  signal(sel: ProcessSelector, sig: NodeJS.Signals): void {
    signalGroup(this.find(sel), sig);
  }

  /** input writes to the process's stdin (or its terminal); refused when it has none. */
  async input(sel: ProcessSelector, data: Buffer, kind: "stdin" | "pty"): Promise<void> {
    const p = this.find(sel);
    if (kind === "pty" && !p.pty) throw new RpcError("failed_precondition", "the process has no PTY");
    const stdin = p.child.stdin;
    if (!stdin || stdin.destroyed || stdin.writableEnded)
      throw new RpcError("failed_precondition", "stdin of the process is not open");
    await new Promise<void>((resolve, reject) =>
      stdin.write(data, (e) => (e ? reject(new RpcError("failed_precondition", e.message)) : resolve())),
    );
  }

  /** closeStdin ends the process's stdin (EOF). */
  closeStdin(sel: ProcessSelector): void {
    const p = this.find(sel);
    if (p.pty) throw new RpcError("failed_precondition", "a PTY has no stdin to close; send Ctrl+D instead");
    if (!p.child.stdin) throw new RpcError("failed_precondition", "stdin of the process is not open");
    p.child.stdin.end();
  }

  /** list is the ProcessInfo of every running process. */
  list(): { config: ProcessConfig; pid: number; tag?: string }[] {
    return [...this.procs.values()].map((p) => ({
      config: p.config,
      pid: p.pid,
      ...(p.tag !== undefined ? { tag: p.tag } : {}),
    }));
  }

  /** killAll ends every process of the sandbox (its groups, SIGKILL). */
  killAll(): void {
    for (const p of this.procs.values()) signalGroup(p, "SIGKILL");
  }
}

function signalGroup(p: Proc, sig: NodeJS.Signals): void {
  try {
    process.kill(-p.pid, sig);
  } catch {
    p.child.kill(sig);
  }
}
