// A benchmark's helper process (the Node host, a sandbox-side server) driven over IPC: the child
// sends `{ready: true, ...}` once it serves, then answers each `{id, op, ...}` with `{id, ...}`
// (or `{id, error}`). Its CPU and memory are its own, apart from the load generator's.
import { type ForkOptions, fork } from "node:child_process";

/** IpcChild is a forked helper: its pid, what its ready message said, and ask (one request). */
export interface IpcChild<Ready> {
  pid: number;
  ready: Ready;
  ask(request: { op: string } & Record<string, unknown>): Promise<unknown>;
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };

/**
 * forkIpc forks script with args and resolves once it reports ready; a child that exits first
 * rejects, and one that exits later rejects the requests it had not answered.
 */
export async function forkIpc<Ready extends object>(
  script: URL,
  args: string[],
  options: ForkOptions = {},
): Promise<IpcChild<Ready>> {
  const child = fork(script.pathname, args, options);
  const waiting = new Map<number, Pending>();
  let nextId = 0;
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once("exit", (code) => {
      const gone = new Error(`${script.pathname} exited with ${code}`);
      reject(gone);
      for (const w of waiting.values()) w.reject(gone);
      waiting.clear();
    });
    child.on("message", (m: { ready?: boolean; id?: number; error?: string }) => {
      if (m.ready) return resolve(m as Ready);
      const w = m.id === undefined ? undefined : waiting.get(m.id);
      if (!w || m.id === undefined) return;
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(m.error));
      else w.resolve(m);
    });
  });
  return {
    pid: child.pid ?? 0,
    ready,
    ask: (request) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        child.send({ ...request, id });
      }),
  };
}
