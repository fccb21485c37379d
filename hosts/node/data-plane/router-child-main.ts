// The sandbox router's entry point, started by router-child.ts: by default as a process of
// its own (Node flags of its own: its collector tuned for a small heap whose garbage is a
// download's buffers, ADR 0036), or as a worker thread of the host's process. Either way its
// buffers churn a heap of their own (a download's garbage never makes the control plane's heap
// collect) and its event loop is not the API's. It builds its own API client and watch, with
// credentials it asks the host for (client-node stays out: its 24 MB of heap would be marked by
// every full collection a download's buffers cause), and talks to the host only by messages.
import { Registry } from "prom-client";
import { KubeClient } from "../../../lib/kube/client.ts";
import { meteredTransport } from "../../../lib/metrics/metered-transport.ts";
import { createMetrics } from "../../../lib/metrics/metrics.ts";
import { answer, hostCalls, openThreadPort, ready, threadLog } from "../child-port.ts";
import {
  applyCredentials,
  type Credentials,
  type KubeAccess,
  nodeKubeTransport,
  nodeKubeWatch,
} from "../kube-transport.ts";
import type { HostAnswer } from "../supervised-child.ts";
import { startDataPlane } from "./data-plane.ts";
import type { DataPlaneThreadSettings, ToDataPlane } from "./router-child.ts";
import { youngCollection } from "./young-collections.ts";

const { port, data } = await openThreadPort("router-child-main.ts (see router-child.ts)");
const log = threadLog(port);
const settings = data as DataPlaneThreadSettings;
const host = hostCalls(port);

/** CREDENTIALS_REUSE_MS: how long one answer of the host's credentials serves this thread's requests. */
const CREDENTIALS_REUSE_MS = 30_000;
/** CREDENTIALS_MS bounds the host's answer (an exec plugin minting a token included). */
const CREDENTIALS_MS = 10_000;
let credentials: { at: number; value: Promise<Credentials> } | undefined;
const access: KubeAccess = {
  server: settings.server,
  apply: async (options) => {
    if (!credentials || Date.now() - credentials.at > CREDENTIALS_REUSE_MS) {
      const value = host.call<Credentials>("credentials", CREDENTIALS_MS);
      credentials = { at: Date.now(), value };
      // A failed answer is not kept: the next request asks again.
      value.catch(() => {
        if (credentials?.value === value) credentials = undefined;
      });
    }
    applyCredentials(options, await credentials.value);
  },
};
// This thread's metrics: the host's thread asks for them on every scrape and merges them with its own.
const metrics = createMetrics(new Registry());
const transport = nodeKubeTransport(access, settings.kubeTimeouts ? { timeouts: settings.kubeTimeouts } : {});
const watch = nodeKubeWatch(
  access,
  settings.kubeTimeouts?.read ? { headerTimeoutMs: settings.kubeTimeouts.read } : {},
);
const dataPlane = await startDataPlane(
  { kube: new KubeClient(meteredTransport(transport, metrics)), watch, log, metrics },
  settings.config,
  log,
  // With --expose-gc (DATA_PLANE_NODE_FLAGS) the router asks for scavenges as it moves bytes.
  youngCollection(globalThis.gc),
);

port.on("message", (m: ToDataPlane | HostAnswer) => {
  if (m.op === "host-answer") return host.settle(m);
  if (m.op === "forget") return dataPlane.forget(m.sandboxId);
  void answer(port, m.id, async () => {
    if (m.op === "activity") return [...dataPlane.activity()].map(([id, at]) => [id, at.getTime()]);
    if (m.op === "metrics") return metrics.registry.getMetricsAsJSON();
    await dataPlane.close();
  });
});
ready(port, dataPlane.ports);
