import type { Counter, MetricObjectWithValues, MetricValue } from "prom-client";
import type { EnvReport } from "../../functions/runs/reconcile-env.ts";
import type { PoolReport } from "../../functions/runs/reconcile-pool.ts";
import type { MemberRefreshReport } from "../../functions/runs/refresh-member.ts";
import type { Log } from "../../lib/util/log.ts";
import type { StepSettings } from "./node-host-deps.ts";
import type { PostgresHistorySettings } from "./postgres-history.ts";
import type { AuditWork, Reconciler, ReconcilerOptions } from "./reconciler.ts";
import { superviseThread } from "./supervised-child.ts";

/** ReconcilerThreadSettings start the reconciler's thread; they cross threads, so plain data only. */
export interface ReconcilerThreadSettings extends StepSettings, ReconcilerOptions {
  /** kubeconfig as KubeConfig.exportConfig() writes it (the thread loads its own client). */
  kubeconfig: string;
  historyPath: string;
  /** historyDatabase: the thread opens a PostgreSQL pool of its own instead of historyPath. */
  historyDatabase?: PostgresHistorySettings;
  /** hostActivity: the host has an activity source (its router) the thread pulls. */
  hostActivity?: boolean;
}

/** HostActivity answers the thread's pulls: sandbox id → last active (rejects: cannot tell). */
export type HostActivity = () => Promise<ReadonlyMap<string, Date>>;

/**
 * ToReconciler is what the host's thread asks the reconciler's (supervised-child.ts adds the
 * id); every op but audit is answered. The thread's own call to the host ("activity") is a
 * host-call (supervised-child.ts).
 */
export type ToReconciler =
  | { op: "audit"; work: AuditWork }
  | { op: "run"; id: number; step: string; namespace: string; pool: string }
  | { op: "run-env"; id: number; namespace: string; env: string }
  | { op: "refresh-member"; id: number; namespace: string; env: string; member: string }
  | { op: "idle"; id: number }
  | { op: "metrics"; id: number }
  | { op: "close"; id: number };

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
 * startReconcilerThread runs the reconciler in a worker thread (reconciler-child-main.ts) and returns
 * a Reconciler that talks to it; the thread's log entries go to `log`. A thread that dies is
 * logged and started again (superviseThread): the runs it had in flight are lost (the next audit
 * event or tick starts them again; every step is safe to repeat) and calls waiting on it fail.
 * Only a thread that cannot start at all fails the host's start.
 */
export async function startReconcilerThread(
  settings: ReconcilerThreadSettings,
  log: Log,
  restarts?: Counter<never>,
  hostActivity?: HostActivity,
): Promise<ReconcilerThread> {
  const thread = await superviseThread({
    name: "reconciler",
    url: new URL("./reconciler-child-main.ts", import.meta.url),
    workerData: () => settings,
    log,
    restarts,
    // The router's view of traffic, for idle release (as [sandbox id, ms] pairs: plain data).
    answers: hostActivity
      ? {
          activity: async () =>
            [...(await hostActivity())].map(([sandbox, at]): [string, number] => [sandbox, at.getTime()]),
        }
      : {},
  });
  return {
    // Without a thread (restarting) the batch is dropped: the tick picks up what it would have done.
    audit: (work) => {
      thread.post({ op: "audit", work });
    },
    run: (step, namespace, pool) => thread.ask<PoolReport>({ op: "run", step, namespace, pool }),
    runEnv: (namespace, env) => thread.ask<EnvReport>({ op: "run-env", namespace, env }),
    refreshMember: (namespace, env, member) =>
      thread.ask<MemberRefreshReport>({ op: "refresh-member", namespace, env, member }),
    idle: () => thread.ask<void>({ op: "idle" }),
    metrics: () => thread.ask<MetricObjectWithValues<MetricValue<string>>[]>({ op: "metrics" }),
    kill: () => thread.kill(),
    close: () => thread.close(),
  };
}
