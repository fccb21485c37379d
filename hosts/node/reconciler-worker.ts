import { Worker } from "node:worker_threads";
import type { Counter, MetricObjectWithValues, MetricValue } from "prom-client";
import type { EnvReport } from "../../functions/reconcile-env.ts";
import type { PoolReport } from "../../functions/reconcile-pool.ts";
import type { Log } from "../../lib/log.ts";
import type { AuditWork, Reconciler, ReconcilerOptions } from "./reconciler.ts";
import type { StepSettings } from "./step-deps.ts";

/** ReconcilerThreadSettings start the reconciler's thread; they cross threads, so plain data only. */
export interface ReconcilerThreadSettings extends StepSettings, ReconcilerOptions {
  /** kubeconfig as KubeConfig.exportConfig() writes it (the thread loads its own client). */
  kubeconfig: string;
  historyPath: string;
  /** hostActivity: the host's thread has an activity source (its router) the thread pulls. */
  hostActivity?: boolean;
}

/** HostActivity answers the thread's pulls: sandbox id → last active (throws: cannot tell). */
export type HostActivity = () => ReadonlyMap<string, Date>;

/** ToReconciler is what the host's thread asks the reconciler's; every op but audit is answered. */
export type ToReconciler =
  | { op: "audit"; work: AuditWork }
  | { op: "run"; id: number; step: string; namespace: string; pool: string }
  | { op: "run-env"; id: number; namespace: string; env: string }
  | { op: "idle"; id: number }
  | { op: "metrics"; id: number }
  | { op: "close"; id: number }
  | { op: "activity"; id: number; value: [string, number][] }
  | { op: "activity"; id: number; error: string };

/** FromReconciler is what the reconciler's thread sends back. */
export type FromReconciler =
  | { op: "ready" }
  | { op: "log"; level: keyof Log; obj: object; msg?: string }
  | { op: "pull-activity"; id: number }
  | { op: "reply"; id: number; value: unknown }
  | { op: "reply"; id: number; error: string; name: string };

/** answerActivity is the host's answer to one of the thread's activity pulls. */
function answerActivity(id: number, hostActivity: HostActivity | undefined): ToReconciler {
  try {
    if (!hostActivity) throw new Error("this host has no activity source");
    const value = [...hostActivity()].map(([sandbox, at]): [string, number] => [sandbox, at.getTime()]);
    return { op: "activity", id, value };
  } catch (e) {
    return { op: "activity", id, error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * A reconciler thread that died is started again after RESTART_DELAY_MS, doubling up to
 * RESTART_DELAY_MAX_MS while restarts keep failing or dying; a thread that stayed up for
 * STABLE_MS resets the delay.
 */
const RESTART_DELAY_MS = 1000;
const RESTART_DELAY_MAX_MS = 30_000;
const STABLE_MS = 60_000;

/**
 * ReconcilerThread is the Reconciler in its thread, and kill: the thread ends at once, as a crash
 * would end it (its runs in flight are lost), and is started again like one; it resolves with the
 * thread's exit code. Tests and operators use it to prove the restart.
 */
export interface ReconcilerThread extends Reconciler {
  kill(): Promise<number>;
  /** metrics are the thread's metrics as prom-client's JSON (merged into the host's /metrics). */
  metrics(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
}

/**
 * startReconcilerThread runs the reconciler in a worker thread (reconciler-thread.ts) and returns
 * a Reconciler that talks to it; the thread's log entries go to `log`. A thread that dies is
 * logged and started again, with a growing delay while starts keep failing: the runs it had in
 * flight are lost (the next audit event or tick starts them again; every step is safe to repeat)
 * and calls waiting on it fail. Only a thread that cannot start at all fails the host's start.
 */
export async function startReconcilerThread(
  settings: ReconcilerThreadSettings,
  log: Log,
  restarts?: Counter<never>,
  hostActivity?: HostActivity,
): Promise<ReconcilerThread> {
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let worker: Worker | undefined;
  let closing = false;
  let nextId = 0;
  let restartDelay = RESTART_DELAY_MS;
  // restart starts a new thread after the current delay, and keeps trying while starts fail.
  const restart = () => {
    if (closing) return;
    const delay = restartDelay;
    restartDelay = Math.min(restartDelay * 2, RESTART_DELAY_MAX_MS);
    log.error({ delayMs: delay }, "reconciler thread down; starting it again");
    restarts?.inc();
    setTimeout(() => {
      if (closing) return;
      spawn().catch((err: unknown) => {
        log.error({ err: String(err) }, "reconciler restart failed");
        restart();
      });
    }, delay);
  };
  const spawn = () =>
    new Promise<void>((resolve, reject) => {
      const w = new Worker(new URL("./reconciler-thread.ts", import.meta.url), { workerData: settings });
      let readyAt: number | undefined;
      let failure = "";
      w.on("message", (m: FromReconciler) => {
        if (m.op === "ready") {
          readyAt = Date.now();
          // Closed while this thread was starting: it must not run (its tick would).
          if (closing) void w.terminate();
          else worker = w;
          return resolve();
        }
        if (m.op === "log") return log[m.level](m.obj, m.msg);
        if (m.op === "pull-activity") return w.postMessage(answerActivity(m.id, hostActivity));
        const call = waiting.get(m.id);
        waiting.delete(m.id);
        if ("error" in m) call?.reject(Object.assign(new Error(m.error), { name: m.name }));
        else call?.resolve(m.value);
      });
      w.on("error", (err) => {
        failure = err instanceof Error ? err.message : String(err);
        log.error({ err: failure }, "reconciler thread failed");
      });
      w.on("exit", (code) => {
        if (worker === w) worker = undefined;
        for (const call of waiting.values()) call.reject(new Error(`the reconciler thread exited (${code})`));
        waiting.clear();
        if (readyAt === undefined)
          return reject(
            new Error(
              `the reconciler thread exited (${code}) before it was ready${failure ? `: ${failure}` : ""}`,
            ),
          );
        if (closing) return;
        if (Date.now() - readyAt >= STABLE_MS) restartDelay = RESTART_DELAY_MS;
        log.error({ code }, "reconciler thread exited");
        restart();
      });
    });
  await spawn();
  const ask = <T>(
    m:
      | { op: "run"; step: string; namespace: string; pool: string }
      | { op: "run-env"; namespace: string; env: string }
      | { op: "idle" | "close" | "metrics" },
  ) =>
    new Promise<T>((resolve, reject) => {
      if (!worker) return reject(new Error("the reconciler thread is restarting"));
      const id = nextId++;
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...m, id } satisfies ToReconciler);
    });
  return {
    // Without a thread (restarting) the batch is dropped: the tick picks up what it would have done.
    audit: (work) => worker?.postMessage({ op: "audit", work } satisfies ToReconciler),
    run: (step, namespace, pool) => ask<PoolReport>({ op: "run", step, namespace, pool }),
    runEnv: (namespace, env) => ask<EnvReport>({ op: "run-env", namespace, env }),
    idle: () => ask<void>({ op: "idle" }),
    metrics: () => ask<MetricObjectWithValues<MetricValue<string>>[]>({ op: "metrics" }),
    kill: async () => {
      const w = worker;
      if (!w) throw new Error("no reconciler thread is running");
      return w.terminate();
    },
    close: async () => {
      closing = true;
      const w = worker;
      await ask<void>({ op: "close" }).catch(() => {});
      await w?.terminate();
    },
  };
}
