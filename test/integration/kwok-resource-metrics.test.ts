import { networkInterfaces } from "node:os";
import { PatchStrategy, setHeaderOptions, type V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readNodeFigures } from "../../functions/usage/node-figures.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { STARTED_AT_ANNOTATION } from "../../lib/crd/keys.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import {
  parseResourceMetrics,
  RESOURCE_METRICS_ANNOTATION,
  resourceMetricsSource,
} from "../../lib/usage/resource-metrics.ts";
import type { ContainerUsage } from "../../lib/usage/sample.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until, watchPodUntil } from "./support/kube.ts";
import { onRealNode, REAL_IMAGES, realNode } from "./support/real-node.ts";

// kwok's resource usage simulation (infra/kwok/resource-usage.yaml), read by the sampler's own
// reader (readNodeFigures): the node's RESOURCE_METRICS_ANNOTATION names a path under the
// apiserver's node proxy, and lib/usage/resource-metrics.ts parses what comes back. The real node's kubelet serves the same
// text at /metrics/resource, through the same proxy, for the same parser.

const { kc, core, cluster } = kube();
const NODE = "kwok-node-0";
const MiB = 1024 * 1024;
const MERGE = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
/** client is the admin's, through the host's own transport, for readNodeFigures. */
const client = new KubeClient(nodeKubeTransport(kc));
let ns: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "usage"));
});
afterAll(async () => cleanup());

/** proxied GETs `path` under the node proxy of `proxyNode` as the admin, with a timeout. */
async function proxied(proxyNode: string, path: string): Promise<string> {
  const res = await httpsRequest(
    `${cluster.server}/api/v1/nodes/${proxyNode}/proxy/${path}`,
    cluster.caCert,
    {
      headers: { authorization: `Bearer ${cluster.adminToken}` },
      timeoutMs: 10_000,
    },
  );
  if (res.status !== 200) throw new Error(`node proxy answered ${res.status}: ${res.body}`);
  return res.body;
}

/** A read of kwok-node-0's metrics, with the wall-clock seconds just before and after it. */
interface Read {
  usage: ContainerUsage[];
  before: number;
  after: number;
}

/** readKwok reads kwok-node-0's resource metrics as the sampler does, where its annotation says. */
async function readKwok(): Promise<Read> {
  const before = Date.now() / 1000;
  const { figures } = await readNodeFigures(client, NODE, new Date().toISOString(), 10_000);
  const after = Date.now() / 1000;
  return { usage: figures, before, after };
}

/** ownAddresses are this machine's IPv4 addresses. */
const ownAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .filter((a) => a?.family === "IPv4")
    .map((a) => a?.address);

const of = (read: Read, pod: string, container = "main") =>
  read.usage.find((u) => u.namespace === ns && u.pod === pod && u.container === container);

/** readUntil reads until `ready` holds (kwok's caches lag a new pod or annotation a moment). */
function readUntil(what: string, ready: (read: Read) => boolean): Promise<Read> {
  return until(what, 20_000, async () => {
    const read = await readKwok();
    return ready(read) ? read : undefined;
  });
}

/** expectCpu: `pod`'s counter is `cores` × the seconds since its start, as of the read. */
function expectCpu(read: Read, pod: string, cores: number) {
  const u = of(read, pod);
  const start = Date.parse(u?.startTime ?? "") / 1000;
  expect(u?.cpuCoreSeconds).toBeGreaterThanOrEqual(cores * (read.before - start) - 1e-6);
  expect(u?.cpuCoreSeconds).toBeLessThanOrEqual(cores * (read.after - start) + 1e-6);
}

async function createPod(name: string, annotations: Record<string, string>, image = "registry.local/x:1") {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name, annotations },
      spec: { nodeName: NODE, containers: [{ name: "main", image }] },
    },
  });
}

const annotate = (name: string, annotations: Record<string, string>) =>
  core.patchNamespacedPod({ name, namespace: ns, body: { metadata: { annotations } } }, MERGE);

const running = (pod: V1Pod) => pod.status?.phase === "Running";

describe("kwok's resource metrics through the node proxy", () => {
  it("every kwok node names its metrics path, served by kwok on an address of this machine", async () => {
    const nodes = (await core.listNode({ labelSelector: "type=kwok" })).items;
    expect(nodes.length).toBeGreaterThan(0);
    for (const n of nodes) {
      const name = n.metadata?.name ?? "";
      const annotation = n.metadata?.annotations?.[RESOURCE_METRICS_ANNOTATION] ?? "";
      expect(annotation).toMatch(new RegExp(`^http:${name}:\\d+/metrics/nodes/${name}/metrics/resource$`));
      // The production reader takes it (a source it refused would give no figures at all).
      expect(resourceMetricsSource(annotation)).toMatchObject({
        ok: true,
        proxy: expect.stringMatching(/^http:/),
      });
      const ip = n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "";
      expect(ownAddresses()).toContain(ip);
    }
  });

  it("shows a container's figures from its pod's annotations, defaults without, none before it runs", async () => {
    await createPod("figures", { "kwok.x-k8s.io/usage-cpu": "250m", "kwok.x-k8s.io/usage-memory": "96Mi" });
    await createPod("plain", {});
    await createPod("pending", { "kwok.x-k8s.io/usage-memory": "1Gi" }, "registry.invalid/unpullable:1");
    const figures = await watchPodUntil(kc, ns, "figures", "Running", running);
    await watchPodUntil(kc, ns, "plain", "Running", running);

    // kwok adds a container's start-time series a moment after its usage: wait for both, as a
    // sample needs the start (a figure without one is never shown).
    const read = await readUntil(
      "both pods' figures and starts",
      (r) => !!of(r, "figures")?.startTime && !!of(r, "plain")?.startTime,
    );
    expect(of(read, "figures")).toMatchObject({
      memoryWorkingSetBytes: 96 * MiB,
      startTime: new Date(figures.status?.startTime ?? 0).toISOString(),
    });
    expectCpu(read, "figures", 0.25);
    expect(of(read, "plain")?.memoryWorkingSetBytes).toBe(48 * MiB);
    expectCpu(read, "plain", 0.01);
    // The pod that cannot pull its image is not running: no figures, whatever its annotations.
    expect(of(read, "pending")).toBeUndefined();

    // A changed annotation shows in a later read, for memory and for the CPU rate.
    await annotate("figures", { "kwok.x-k8s.io/usage-cpu": "1500m", "kwok.x-k8s.io/usage-memory": "200Mi" });
    const changed = await readUntil(
      "the changed figures",
      (r) => of(r, "figures")?.memoryWorkingSetBytes === 200 * MiB,
    );
    expectCpu(changed, "figures", 1.5);

    // The sandbox's start (the control plane's started-at) is its container's start: the counter
    // starts afresh there, as the kubelet's does for the container an in-place swap starts.
    const startedAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 3000).toISOString();
    await annotate("figures", { [STARTED_AT_ANNOTATION]: startedAt });
    const restarted = await readUntil(
      "the sandbox's start",
      (r) => of(r, "figures")?.startTime === startedAt,
    );
    expectCpu(restarted, "figures", 1.5);
  }, 90_000);
});

describe("the real node's resource metrics through the node proxy", () => {
  it("parse with the same parser: a running container's CPU, memory and start", async () => {
    const node = realNode();
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: "real" },
        spec: {
          ...onRealNode,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: "main", image: REAL_IMAGES.idle }],
        },
      },
    });
    const pod = await watchPodUntil(
      kc,
      ns,
      "real",
      "running",
      (p) => !!p.status?.containerStatuses?.[0]?.state?.running,
      120_000,
    );
    const startedAt = Date.parse(String(pod.status?.containerStatuses?.[0]?.state?.running?.startedAt));
    const u = await until("the real container's figures", 60_000, async () => {
      const usage = parseResourceMetrics(
        await proxied(node.name, "metrics/resource"),
        new Date().toISOString(),
      );
      return usage.find((c) => c.namespace === ns && c.pod === "real" && c.container === "main");
    });
    expect(u.cpuCoreSeconds).toBeGreaterThanOrEqual(0);
    expect(u.memoryWorkingSetBytes).toBeGreaterThan(0);
    // The kubelet's start time has sub-second precision, the pod status whole seconds.
    expect(Math.abs(Date.parse(u.startTime ?? "") - startedAt)).toBeLessThan(1000);
    // The kubelet stamps its figures with its stats' time: the sample's `at` is that, recent.
    expect(Math.abs(Date.parse(u.at) - Date.now())).toBeLessThan(60_000);
  }, 180_000);
});
