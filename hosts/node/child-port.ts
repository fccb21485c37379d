// The thread's side of supervised-child.ts: a Log that forwards entries to the host, and answers
// to the host's requests by id (errors cross with their name: the manual triggers tell
// StepRefused and Misconfigured apart by it). The same code runs in a worker thread (its
// parentPort) and in a child process the host forked (its IPC channel): openThreadPort says which.
import { parentPort, workerData } from "node:worker_threads";
import type { Log } from "../../lib/util/log.ts";
import type { FromThread, HostAnswer } from "./supervised-child.ts";

/**
 * ThreadPort is the thread's end of its channel to the host: a worker's parentPort, or a child
 * process's IPC channel in the same shape.
 */
export interface ThreadPort {
  postMessage(m: unknown): void;
  // biome-ignore lint/suspicious/noExplicitAny: each thread narrows the messages it takes.
  on(event: "message", listener: (m: any) => void): unknown;
}

/** HELLO_MS bounds a forked thread's wait for its settings after it said hello. */
const HELLO_MS = 30_000;

/**
 * openThreadPort is the channel and the settings the host started this thread with: a worker's
 * parentPort and workerData; in a forked child, its IPC channel, the settings asked for with a
 * `hello` once this module listens (so none can arrive before anyone hears them; they never sit in
 * the environment or the command line, where secrets would show). A forked child lives as long as
 * its host: it exits when the channel closes, and leaves signals to the host (a Ctrl-C reaches
 * the whole process group; the host drains and closes it).
 */
export async function openThreadPort(what: string): Promise<{ port: ThreadPort; data: unknown }> {
  if (parentPort) return { port: parentPort, data: workerData };
  const send = process.send?.bind(process);
  if (!send) throw new Error(`${what} runs as a worker thread or a forked child of the host`);
  process.on("disconnect", () => process.exit(0));
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => {});
  const data = await new Promise<unknown>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: no settings from the host`)), HELLO_MS);
    const first = (m: { op?: string; data?: unknown }) => {
      if (m?.op !== "thread-start") return;
      clearTimeout(timer);
      process.off("message", first);
      resolve(m.data);
    };
    process.on("message", first);
    send({ op: "hello" });
  });
  return {
    port: {
      postMessage: (m) => process.connected && send(m),
      on: (_event, listener) => process.on("message", listener),
    },
    data,
  };
}

/** threadLog forwards entries to the host's logger; what cannot be cloned goes as text. */
export function threadLog(port: ThreadPort): Log {
  const post = (m: FromThread) => port.postMessage(m);
  const level =
    (name: keyof Log) =>
    (obj: object, msg?: string): void => {
      try {
        post({ op: "log", level: name, obj, ...(msg === undefined ? {} : { msg }) });
      } catch {
        post({ op: "log", level: name, obj: { entry: String(obj) }, ...(msg === undefined ? {} : { msg }) });
      }
    };
  return { debug: level("debug"), info: level("info"), warn: level("warn"), error: level("error") };
}

/** answer runs one request's work and posts its reply (value or error) under the request's id. */
export async function answer(port: ThreadPort, id: number, work: () => unknown): Promise<void> {
  try {
    port.postMessage({ op: "reply", id, value: await work() } satisfies FromThread);
  } catch (e) {
    port.postMessage({
      op: "reply",
      id,
      error: e instanceof Error ? e.message : String(e),
      name: e instanceof Error ? e.name : "Error",
    } satisfies FromThread);
  }
}

/** ready tells the host the thread runs, with what it should know (e.g. its ports). */
export function ready(port: ThreadPort, info?: unknown): void {
  port.postMessage({ op: "ready", ...(info === undefined ? {} : { info }) } satisfies FromThread);
}

/** HostCalls are a thread's calls to its host (ThreadOptions.answers), each bounded in time. */
export interface HostCalls {
  call<T>(name: string, timeoutMs: number): Promise<T>;
  /** settle takes a host-answer message (the thread's message handler passes them here). */
  settle(m: HostAnswer): void;
}

/** hostCalls makes a thread's HostCalls on its port. */
export function hostCalls(port: ThreadPort): HostCalls {
  const waiting = new Map<number, (m: HostAnswer) => void>();
  let nextId = 0;
  return {
    call: <T>(name: string, timeoutMs: number) =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the host did not answer "${name}" within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(id, (m) => {
          clearTimeout(timer);
          waiting.delete(id);
          if ("error" in m) reject(new Error(`the host's "${name}": ${m.error}`));
          else resolve(m.value as T);
        });
        port.postMessage({ op: "host-call", id, call: name } satisfies FromThread);
      }),
    settle: (m) => waiting.get(m.id)?.(m),
  };
}
