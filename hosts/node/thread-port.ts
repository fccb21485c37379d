// The thread's side of supervised-thread.ts: a Log that forwards entries to the host, and answers
// to the host's requests by id (errors cross with their name: the manual triggers tell
// StepRefused and Misconfigured apart by it).
import type { MessagePort } from "node:worker_threads";
import type { Log } from "../../lib/log.ts";
import type { FromThread, HostAnswer } from "./supervised-thread.ts";

/** threadLog forwards entries to the host's logger; what cannot be cloned goes as text. */
export function threadLog(port: MessagePort): Log {
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
export async function answer(port: MessagePort, id: number, work: () => unknown): Promise<void> {
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
export function ready(port: MessagePort, info?: unknown): void {
  port.postMessage({ op: "ready", ...(info === undefined ? {} : { info }) } satisfies FromThread);
}

/** HostCalls are a thread's calls to its host (ThreadOptions.answers), each bounded in time. */
export interface HostCalls {
  call<T>(name: string, timeoutMs: number): Promise<T>;
  /** settle takes a host-answer message (the thread's message handler passes them here). */
  settle(m: HostAnswer): void;
}

/** hostCalls makes a thread's HostCalls on its port. */
export function hostCalls(port: MessagePort): HostCalls {
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
