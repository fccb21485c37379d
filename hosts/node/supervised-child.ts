// A worker thread the host keeps running: the reconciler (ADR 0013) and the sandbox router each run
// in one, so neither a tick's big lists nor a download's buffers stall the API's event loop or
// share its heap. The protocol is small and shared (child-port.ts is the thread's side): the
// thread says `ready` (with what it wants the host to know, e.g. its ports), forwards its `log`
// entries, and answers each request by id; its own calls to the host (`host-call`: the router's
// credentials, the router's activity for idle release) are answered from `answers`. A thread
// may instead be a child process (ThreadOptions.process: Node flags of its own, e.g. the router's
// garbage collector tuned for its small heap), with the same messages over its IPC channel.
import { Worker } from "node:worker_threads";
import type { Counter } from "prom-client";
import type { Log } from "../../lib/util/log.ts";
import { forkThread, type ThreadHandle } from "./forked-child.ts";

/** FromThread is what a supervised thread sends its host. */
export type FromThread =
  | { op: "ready"; info?: unknown }
  | { op: "host-call"; id: number; call: string }
  | { op: "log"; level: keyof Log; obj: object; msg?: string }
  | { op: "reply"; id: number; value: unknown }
  | { op: "reply"; id: number; error: string; name: string };

/**
 * A thread that died is started again after RESTART_DELAY_MS, doubling up to RESTART_DELAY_MAX_MS
 * while restarts keep failing or dying; a thread that stayed up for STABLE_MS resets the delay.
 */
const RESTART_DELAY_MS = 1000;
const RESTART_DELAY_MAX_MS = 30_000;
const STABLE_MS = 60_000;

/** ThreadOptions say what to run and who hears about it. */
export interface ThreadOptions {
  /** name says which thread a log line is about ("reconciler", "data plane"). */
  name: string;
  url: URL;
  /** workerData is read at each start (a restart may start from what the last one learned). */
  workerData: () => unknown;
  log: Log;
  restarts?: Counter<never> | undefined;
  /** onReady hears each start's ready info (a restart's too). */
  onReady?: (info: unknown) => void;
  /**
   * answers serve the thread's calls to its host (child-port.ts hostCalls) by name; a call
   * without an answer, or one that throws, is answered with the error.
   */
  answers?: Record<string, () => unknown>;
  /**
   * process runs the thread as a child process (forkThread) started with these Node flags beside
   * the host's own; absent: a worker thread.
   */
  process?: { nodeFlags: readonly string[] };
}

/** SupervisedThread talks to the running thread. */
export interface SupervisedThread {
  /** ask sends a request and resolves with its reply (rejects while the thread is restarting). */
  ask<T>(m: { op: string } & Record<string, unknown>): Promise<T>;
  /** post sends a message that wants no reply; false while the thread is restarting (dropped). */
  post(m: { op: string } & Record<string, unknown>): boolean;
  /** kill ends the thread at once, as a crash would (it is started again); its exit code. */
  kill(): Promise<number>;
  /** close asks the thread to close (`{op: "close"}`, answered) and ends it; no restart. */
  close(): Promise<void>;
  /** pid is the running thread's process id when it is a child process (benchmarks read its CPU). */
  pid(): number | undefined;
}

/** HostAnswer is the host's answer to a thread's host-call. */
export type HostAnswer =
  | { op: "host-answer"; id: number; value: unknown }
  | { op: "host-answer"; id: number; error: string };

/** answerCall runs the named answer for a thread's call and posts what it gives (or its error). */
async function answerCall(
  worker: ThreadHandle,
  m: Extract<FromThread, { op: "host-call" }>,
  options: ThreadOptions,
): Promise<void> {
  try {
    const answer = options.answers?.[m.call];
    if (!answer) throw new Error(`the host answers no "${m.call}"`);
    worker.postMessage({ op: "host-answer", id: m.id, value: await answer() } satisfies HostAnswer);
  } catch (e) {
    worker.postMessage({
      op: "host-answer",
      id: m.id,
      error: e instanceof Error ? e.message : String(e),
    } satisfies HostAnswer);
  }
}

/**
 * superviseThread starts the thread and keeps it running: one that dies is logged and started
 * again with a growing delay while starts keep failing; calls waiting on it fail. Only a thread
 * that cannot start at all fails this call.
 */
export async function superviseThread(options: ThreadOptions): Promise<SupervisedThread> {
  const { name, log } = options;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let worker: ThreadHandle | undefined;
  let closing = false;
  let nextId = 0;
  let restartDelay = RESTART_DELAY_MS;
  const restart = () => {
    if (closing) return;
    const delay = restartDelay;
    restartDelay = Math.min(restartDelay * 2, RESTART_DELAY_MAX_MS);
    log.error({ delayMs: delay }, `${name} thread down; starting it again`);
    options.restarts?.inc();
    setTimeout(() => {
      if (closing) return;
      spawn().catch((err: unknown) => {
        log.error({ err: String(err) }, `${name} thread restart failed`);
        restart();
      });
    }, delay);
  };
  const spawn = () =>
    new Promise<void>((resolve, reject) => {
      const w: ThreadHandle = options.process
        ? forkThread(options.url, options.workerData(), options.process.nodeFlags)
        : new Worker(options.url, { workerData: options.workerData() });
      let readyAt: number | undefined;
      let failure = "";
      w.on("message", (m: FromThread | ({ op: string } & Record<string, unknown>)) => {
        if (m.op === "ready") {
          readyAt = Date.now();
          // Closed while this thread was starting: it must not run.
          if (closing) void w.terminate();
          else worker = w;
          options.onReady?.((m as { info?: unknown }).info);
          return resolve();
        }
        if (m.op === "log") {
          const entry = m as Extract<FromThread, { op: "log" }>;
          return log[entry.level](entry.obj, entry.msg);
        }
        if (m.op === "host-call")
          return void answerCall(w, m as Extract<FromThread, { op: "host-call" }>, options);
        if (m.op !== "reply") return;
        const reply = m as Extract<FromThread, { op: "reply" }>;
        const call = waiting.get(reply.id);
        waiting.delete(reply.id);
        if ("error" in reply) call?.reject(Object.assign(new Error(reply.error), { name: reply.name }));
        else call?.resolve(reply.value);
      });
      w.on("error", (err) => {
        failure = err instanceof Error ? err.message : String(err);
        log.error({ err: failure }, `${name} thread failed`);
      });
      w.on("exit", (code) => {
        if (worker === w) worker = undefined;
        for (const call of waiting.values()) call.reject(new Error(`the ${name} thread exited (${code})`));
        waiting.clear();
        if (readyAt === undefined)
          return reject(
            new Error(
              `the ${name} thread exited (${code}) before it was ready${failure ? `: ${failure}` : ""}`,
            ),
          );
        if (closing) return;
        if (Date.now() - readyAt >= STABLE_MS) restartDelay = RESTART_DELAY_MS;
        log.error({ code }, `${name} thread exited`);
        restart();
      });
    });
  await spawn();
  const ask = <T>(m: { op: string } & Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      if (!worker) return reject(new Error(`the ${name} thread is restarting`));
      const id = nextId++;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...m, id });
    });
  return {
    ask,
    post: (m) => {
      worker?.postMessage(m);
      return worker !== undefined;
    },
    kill: async () => {
      const w = worker;
      if (!w) throw new Error(`no ${name} thread is running`);
      return w.terminate();
    },
    close: async () => {
      closing = true;
      const w = worker;
      await ask<void>({ op: "close" }).catch(() => {});
      await w?.terminate();
    },
    pid: () => (worker && "pid" in worker ? (worker.pid as number | undefined) : undefined),
  };
}
