/**
 * pods.ts keeps one sandbox per pod IP: the stand-in serves every kwok pod from one server and
 * tells them apart by the local address it was called on. `/init` with a new access token is a
 * new sandbox on the pod: the previous one's processes are killed, its watchers closed and its
 * directory removed, and the new one gets a fresh directory (with `/home/user`) under the
 * server's temporary root. An `/init` repeating the current token (a retried hook) only
 * replaces the env vars, so it never wipes a sandbox in use.
 */
import { mkdir, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { HOME } from "./paths.ts";
import { ProcessTable } from "./processes.ts";

/** Limits bound what one sandbox may hold at once. */
export interface Limits {
  processes: number;
  watchers: number;
}

/** Sandbox is the state of the sandbox a pod serves. */
export interface Sandbox {
  token: string;
  envVars: Record<string, string>;
  root: { dir: string; real: string };
  processes: ProcessTable;
  /** closers end the sandbox's open watch streams. */
  closers: Set<() => void>;
  watchers: number;
  limits: Limits;
}

/** Pods maps pod IPs to their current sandbox. */
export class Pods {
  private readonly byIp = new Map<string, Sandbox>();
  private seq = 0;
  readonly tempRoot: string;
  readonly limits: Limits;
  constructor(tempRoot: string, limits: Limits) {
    this.tempRoot = tempRoot;
    this.limits = limits;
  }

  get(ip: string): Sandbox | undefined {
    return this.byIp.get(ip);
  }

  /** init applies an /init: same token keeps the sandbox (env vars replaced), else a new one. */
  async init(ip: string, token: string, envVars: Record<string, string>): Promise<void> {
    const current = this.byIp.get(ip);
    if (current && current.token === token) {
      current.envVars = envVars;
      return;
    }
    this.seq += 1;
    const dir = join(this.tempRoot, `${ip.replaceAll(/[^0-9A-Za-z.]/g, "_")}-${this.seq}`);
    await mkdir(join(dir, HOME), { recursive: true });
    const next: Sandbox = {
      token,
      envVars,
      root: { dir, real: await realpath(dir) },
      processes: new ProcessTable(this.limits.processes),
      closers: new Set(),
      watchers: 0,
      limits: this.limits,
    };
    const previous = this.byIp.get(ip);
    this.byIp.set(ip, next);
    if (previous) await retire(previous);
  }

  /** killAll kills every sandbox's processes at once (synchronous: usable on process exit). */
  killAll(): void {
    for (const s of this.byIp.values()) s.processes.killAll();
  }

  /** close ends every sandbox and removes the temporary root. */
  async close(): Promise<void> {
    const all = [...this.byIp.values()];
    this.byIp.clear();
    await Promise.all(all.map(retire));
    await rm(this.tempRoot, { recursive: true, force: true });
  }
}

async function retire(s: Sandbox): Promise<void> {
  s.processes.killAll();
  for (const close of s.closers) close();
  await rm(s.root.dir, { recursive: true, force: true, maxRetries: 3 });
}
