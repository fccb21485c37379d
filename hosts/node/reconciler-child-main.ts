// The reconciler's worker thread (entry point, started by reconciler-child.ts): the reconcile
// steps run here so that parsing a big pod list or planning a thousand pools never holds up the
// API's event loop (ADR 0013). It builds its own API client and history connection from the
// settings it was started with, and talks to the host's thread only by messages.
import { parentPort, workerData } from "node:worker_threads";
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import type { PullActivity } from "../../functions/activity-source.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import { answer, hostCalls, ready, threadLog } from "./child-port.ts";
import { nodeKubeWatch } from "./kube-transport.ts";
import { nodeHostDeps } from "./node-host-deps.ts";
import { openHistory } from "./open-history.ts";
import { startReconciler } from "./reconciler.ts";
import type { ReconcilerThreadSettings, ToReconciler } from "./reconciler-child.ts";
import type { HostAnswer } from "./supervised-child.ts";

const port = parentPort;
if (!port) throw new Error("reconciler-child-main.ts runs as a worker thread (see reconciler-child.ts)");
const log = threadLog(port);

/** PULL_MS bounds one pull of the host's activity: no answer means idle release releases nothing. */
const PULL_MS = 2000;

const host = hostCalls(port);

/** pullFromHost asks the host for its router's activity (ReconcilerThreadSettings.hostActivity). */
const pullFromHost: PullActivity = async () =>
  new Map(
    (await host.call<[string, number][]>("activity", PULL_MS)).map(([sandbox, at]) => [
      sandbox,
      new Date(at),
    ]),
  );

const settings = workerData as ReconcilerThreadSettings;
const kubeconfig = new KubeConfig();
kubeconfig.loadFromString(settings.kubeconfig);
const history = await openHistory(settings, log);
// This thread's metrics: the host's thread asks for them on every scrape and merges them with its own.
const metrics = createMetrics(new Registry());
const reconciler = startReconciler(
  await nodeHostDeps(
    kubeconfig,
    history.store,
    log,
    settings,
    metrics,
    settings.hostActivity ? pullFromHost : undefined,
    { usage: history.usage },
  ),
  settings,
  // The tick's view of the pool pods (ADR 0035).
  nodeKubeWatch(
    kubeconfig,
    settings.kubeTimeouts?.read ? { headerTimeoutMs: settings.kubeTimeouts.read } : {},
  ),
);

port.on("message", (m: ToReconciler | HostAnswer) => {
  if (m.op === "host-answer") return host.settle(m);
  if (m.op === "audit") return reconciler.audit(m.work);
  void answer(port, m.id, async () => {
    if (m.op === "run") return reconciler.run(m.step, m.namespace, m.pool);
    if (m.op === "run-env") return reconciler.runEnv(m.namespace, m.env);
    if (m.op === "refresh-member") return reconciler.refreshMember(m.namespace, m.env, m.member);
    if (m.op === "idle") return reconciler.idle();
    if (m.op === "metrics") return metrics.registry.getMetricsAsJSON();
    await reconciler.close();
    await history.close();
  });
});
ready(port);
