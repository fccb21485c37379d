// The sandbox router's worker thread (entry point, started by data-plane-worker.ts). The router
// moves every byte of every sandbox's traffic: in a thread of its own, its buffers churn a small
// heap of their own (a download's garbage no longer makes the control plane's heap collect) and
// its event loop is not the API's. It builds its own API client and watch from the settings it was
// started with, and talks to the host's thread only by messages.
import { parentPort, workerData } from "node:worker_threads";
import { KubeConfig } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { KubeClient } from "../../../lib/kube/client.ts";
import { meteredTransport } from "../../../lib/metrics/metered-transport.ts";
import { createMetrics } from "../../../lib/metrics/metrics.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../kube-transport.ts";
import { answer, ready, threadLog } from "../thread-port.ts";
import { startDataPlane } from "./data-plane.ts";
import type { DataPlaneThreadSettings, ToDataPlane } from "./data-plane-worker.ts";

const port = parentPort;
if (!port) throw new Error("data-plane-thread.ts runs as a worker thread (see data-plane-worker.ts)");
const log = threadLog(port);
const settings = workerData as DataPlaneThreadSettings;
const kubeconfig = new KubeConfig();
kubeconfig.loadFromString(settings.kubeconfig);
// This thread's metrics: the host's thread asks for them on every scrape and merges them with its own.
const metrics = createMetrics(new Registry());
const transport = nodeKubeTransport(
  kubeconfig,
  settings.kubeTimeouts ? { timeouts: settings.kubeTimeouts } : {},
);
const watch = nodeKubeWatch(
  kubeconfig,
  settings.kubeTimeouts?.read ? { headerTimeoutMs: settings.kubeTimeouts.read } : {},
);
const dataPlane = await startDataPlane(
  { kube: new KubeClient(meteredTransport(transport, metrics)), watch, log, metrics },
  settings.config,
  log,
);

port.on("message", (m: ToDataPlane) => {
  if (m.op === "forget") return dataPlane.forget(m.sandboxId);
  void answer(port, m.id, async () => {
    if (m.op === "activity") return [...dataPlane.activity()].map(([id, at]) => [id, at.getTime()]);
    if (m.op === "metrics") return metrics.registry.getMetricsAsJSON();
    await dataPlane.close();
  });
});
ready(port, dataPlane.ports);
