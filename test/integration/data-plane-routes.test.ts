import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { RouteTable } from "../../hosts/node/data-plane/route-table.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import { apiPhaseOf } from "../../lib/lifecycle/api-phase.ts";
import type { Log } from "../../lib/util/log.ts";
import { kube, newNamespace, recordingClient, until } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil, withPostStart } from "./support/steps.ts";

// The router's route table trusts only what it should (issue #35, point 4): routes come from pods a
// real pool controls (a pod anyone makes with a victim's sandbox-id label takes nothing), a route
// the watch has not confirmed lately is read again before use (a pod claimed again in place keeps
// its IP), and misses for unknown ids reach the apiserver within a fixed budget. Against the real
// apiserver: the test host's own router, and RouteTables built here on a real client and watch.

const { core, kc, cluster } = kube();
const t = poolTest("routes");
const router = `http://127.0.0.1:${cluster.dataPlanePort}`;
const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };
const ID = "agentbox.navix.sh/sandbox-id";
const POOL_LABEL = "agentbox.navix.sh/sandbox-pool";
const hex = () => randomBytes(3).toString("hex");

/** running are the pool's sandboxes this file claimed: id → its Running pod. */
const running = new Map<string, V1Pod>();
let poolUid = "";
let impostorNs = { ns: "", cleanup: async () => {} };

/** claimAll claims every idle pod of pool p under a fresh id and waits until each is Running. */
async function claimAll(ids: string[]): Promise<void> {
  const idle = (await t.pods("p")).filter((p) => phaseOf(p) === "idle");
  for (const [i, id] of ids.entries()) {
    const claimed = await claimSandbox(t.deps, idle[i] as V1Pod, {
      sandboxId: id,
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    });
    if (!claimed.ok) throw new Error(`claim failed: ${claimed.detail}`);
  }
  const pods = await reconcileUntil(t.deps, t.ns, "p", "the claimed sandboxes Running", async () => {
    const ps = (await t.pods("p")).filter((p) => ids.includes(p.metadata?.labels?.[ID] ?? ""));
    return ps.length === ids.length && ps.every((p) => apiPhaseOf(p) === "running" && p.status?.podIP) && ps;
  });
  for (const p of pods) running.set(p.metadata?.labels?.[ID] ?? "", p);
}

/** impostor makes a bare pod in another namespace that says it is sandbox `id` of pool p. */
async function impostor(like: V1Pod, id: string, ownerUid: string): Promise<V1Pod> {
  const name = `impostor-${hex()}`;
  await core.createNamespacedPod({
    namespace: impostorNs.ns,
    body: {
      metadata: {
        name,
        labels: { [POOL_LABEL]: "p", "agentbox.navix.sh/sandbox-phase": "running", [ID]: id },
        annotations: { [ID]: id },
        // A forged controlling reference, even with the real pool's uid: the pool is not here. Its
        // version is one the apiserver does not serve, as an attacker would pick it: the garbage
        // collector cannot resolve the owner and leaves the pod (with v1alpha1 it deletes it as
        // dangling within seconds, which would end the test's impostor, not a real attack).
        ownerReferences: [
          {
            apiVersion: "agents.navix.sh/v0",
            kind: "SandboxPool",
            name: "p",
            uid: ownerUid,
            controller: true,
          },
        ],
      },
      spec: structuredClone(like.spec) as V1Pod["spec"],
    },
  });
  return until(`impostor ${name} Running with an IP`, 30_000, async () => {
    const p = await core.readNamespacedPod({ name, namespace: impostorNs.ns });
    return p.status?.phase === "Running" && isReady(p) && p.status.podIP ? p : undefined;
  });
}

/** listen serves `who` on ip:port (port 0: any); it answers who it is and counts what it got. */
async function listen(
  ip: string,
  port: number,
  who: string,
): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.end(who);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, ip, resolve);
  });
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** viaRouter asks the test host's router for sandbox `id`'s port. */
async function viaRouter(id: string, port: number): Promise<{ status: number; body: string }> {
  const res = await fetch(`${router}/who`, {
    headers: { "e2b-sandbox-id": id, "e2b-sandbox-port": String(port) },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.text() };
}

/** table starts a RouteTable on a real client (requests recorded) and a watch that `cut` silences. */
async function table(now: () => number = Date.now) {
  const requests: string[] = [];
  const cut = { on: false };
  const watch = nodeKubeWatch(kc);
  const silenced: KubeWatchTransport = (req, onEvent, signal) =>
    watch(req, (event) => (cut.on ? false : onEvent(event)), signal);
  const routes = new RouteTable({ kube: recordingClient(requests), watch: silenced, log: quiet }, { now });
  routes.start();
  await routes.synced;
  return { routes, requests, cut };
}

beforeAll(async () => {
  await withPostStart(t.deps);
  impostorNs = await newNamespace(core, "impostors");
  await t.readyPool("p", 3);
  poolUid = (await t.getPool("p")).metadata?.uid ?? "";
}, 120_000);

afterAll(() => impostorNs.cleanup());

describe("the router's routes", () => {
  it("come only from pods a real pool controls: an impostor with a victim's id takes nothing", async () => {
    const [victim, marker] = [`victim-${hex()}`, `marker-${hex()}`];
    await claimAll([victim, marker]);
    const real = running.get(victim) as V1Pod;
    const { routes } = await table();
    try {
      await until("the victim's route", 10_000, async () => routes.route(victim));
      const app = await listen(real.status?.podIP ?? "", 0, "the real sandbox");
      // Impostors in another namespace: one for the victim's id (the real pool's uid forged in),
      // one for an id no sandbox has; both Running with an IP of their own, serving the same port.
      const stolen = await impostor(real, victim, poolUid);
      const ghostId = `ghost-${hex()}`;
      const ghost = await impostor(real, ghostId, "00000000-0000-0000-0000-000000000000");
      const decoys = await Promise.all([
        listen(stolen.status?.podIP ?? "", app.port, "the impostor"),
        listen(ghost.status?.podIP ?? "", app.port, "the ghost"),
      ]);
      try {
        // Every event before the marker's change has reached the table once the marker's has.
        const stamp = new Date().toISOString();
        await core.patchNamespacedPod({
          name: running.get(marker)?.metadata?.name ?? "",
          namespace: t.ns,
          body: [{ op: "add", path: "/metadata/annotations/agentbox.navix.sh~1last-active", value: stamp }],
        });
        await until(
          "the marker's change in the table",
          10_000,
          async () => routes.route(marker)?.lastActive === stamp,
        );
        expect(routes.route(victim)).toMatchObject({ podUid: real.metadata?.uid, podIP: real.status?.podIP });
        expect(await routes.lookup(ghostId)).toBeUndefined();

        // Through the test host's router: the victim's port is the real sandbox's, the ghost is not found.
        expect(await viaRouter(victim, app.port)).toEqual({ status: 200, body: "the real sandbox" });
        const missing = await viaRouter(ghostId, app.port);
        expect(missing.status).toBe(502);
        expect(JSON.parse(missing.body)).toMatchObject({ message: "The sandbox was not found" });
        expect(decoys.map((d) => d.hits)).toEqual([[], []]);
      } finally {
        for (const s of [app, ...decoys]) s.server.close();
      }
    } finally {
      routes.close();
    }
  }, 90_000);

  it("are read again once the watch has been silent past the bound: a pod claimed again in place is not the old sandbox's", async () => {
    const [before, after] = [`before-${hex()}`, `after-${hex()}`];
    await claimAll([before]);
    const pod = running.get(before) as V1Pod;
    const podPath = `/api/v1/namespaces/${t.ns}/pods/${pod.metadata?.name}`;
    const clock = { offsetMs: 0 };
    const { routes, requests, cut } = await table(() => Date.now() + clock.offsetMs);
    try {
      await until("the route", 10_000, async () => routes.route(before));
      // The watch goes silent (failing, lagging): nothing it would say reaches the table.
      cut.on = true;
      // Past the bound with the pod unchanged: one read of the pod confirms the route, which is used.
      clock.offsetMs = 11_000;
      expect(routes.route(before)).toBeUndefined();
      requests.length = 0;
      expect(await routes.lookup(before)).toMatchObject({ podUid: pod.metadata?.uid });
      expect(requests).toEqual([`GET ${podPath} 200`]);
      expect(routes.route(before)).toBeDefined();

      // Released and claimed again in place (same pod, same IP) as another sandbox, unseen by the watch.
      await core.patchNamespacedPod({
        name: pod.metadata?.name ?? "",
        namespace: t.ns,
        body: [
          { op: "replace", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: after },
          { op: "replace", path: "/metadata/annotations/agentbox.navix.sh~1sandbox-id", value: after },
        ],
      });
      clock.offsetMs = 22_000;
      requests.length = 0;
      expect(await routes.lookup(before)).toBeUndefined();
      expect(requests).toEqual([`GET ${podPath} 200`]);
      expect(routes.route(before)).toBeUndefined();
      // The pod's new sandbox is routed; the old id never again, whatever is asked.
      expect(routes.route(after)).toMatchObject({ podUid: pod.metadata?.uid, podIP: pod.status?.podIP });
      expect(await routes.lookup(before)).toBeUndefined();
      clock.offsetMs = 40_000;
      expect(await routes.lookup(before)).toBeUndefined();
    } finally {
      routes.close();
    }
  }, 90_000);

  it("read the apiserver for unknown ids within a fixed budget, whatever clients send", async () => {
    const frozen = Date.now();
    const { routes, requests } = await table(() => frozen);
    try {
      requests.length = 0;
      // 40 misses at one instant, a few at a time: the burst (10) reads, the rest are answered unread.
      const answers: unknown[] = [];
      for (let wave = 0; wave < 8; wave++)
        answers.push(
          ...(await Promise.all(Array.from({ length: 5 }, () => routes.lookup(`random-${hex()}`)))),
        );
      expect(answers.every((a) => a === undefined)).toBe(true);
      expect(answers).toHaveLength(40);
      expect(requests.filter((r) => r.startsWith("GET /api/v1/pods "))).toHaveLength(10);
      expect(requests).toHaveLength(10);
    } finally {
      routes.close();
    }
  }, 30_000);
});
