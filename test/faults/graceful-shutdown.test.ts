import type { V1Pod } from "@kubernetes/client-node";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpsRequest } from "../../infra/cluster/http.ts";
import { registerWebhooks } from "../../infra/cluster/install.ts";
import { SANDBOX_ID_LABEL, SANDBOX_POOL_LABEL, WAITER_UNTIL_ANNOTATION } from "../../lib/crd/keys.ts";
import { PENDING_REQUESTS_PREFIX } from "../../lib/pool/pending-requests.ts";
import { until } from "../integration/support/kube.ts";
import { phaseOf, poolObject } from "../integration/support/steps.ts";
import { type FaultCluster, faultCluster, type HostProcess } from "./support/fault-cluster.ts";

// The host is stopped as Kubernetes stops a pod (SIGTERM) while creates are under way, some of
// them waiting (ADR 0029). Readiness goes false at once while the host serves on for the settle;
// then it stops taking connections and lets the requests under way end within the grace; a create
// still waiting when the grace ends hands its start back (its sandbox runs through another host's
// reconcile, not after its waiter-until) and gets a clean 503; the host removes its pending
// marks and exits 0. A replica beside it serves the admission webhooks meanwhile, as the Service
// would route them to another replica in a cluster.

let c: FaultCluster;
const NS = "faults";
const SETTLE_S = 2;
const GRACE_S = 20;

/** pool is a pool whose pods take `pull` (a Go duration) to start and to reset: creates wait that long. */
const pool = (name: string, size: number, pull: string) =>
  poolObject(NS, name, size, {
    template: {
      metadata: { annotations: { "kwok.agentbox.dev/pull-delay": pull } },
      spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
    },
  });

beforeAll(async () => {
  c = await faultCluster(`faults-${process.pid}-shutdown`, {
    AGENTBOX_SHUTDOWN_SETTLE_SECONDS: String(SETTLE_S),
    AGENTBOX_SHUTDOWN_GRACE_SECONDS: String(GRACE_S),
  });
  const replica = await c.startReplica();
  await registerWebhooks(c.kc, replica.base, c.state.caCert);
  await c.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  await c.kube.createPool(NS, pool("drain", 3, "5s") as never);
  await c.kube.createPool(NS, pool("slow", 1, "10s") as never);
  await c.allIdle(NS, "drain", 3);
  await c.allIdle(NS, "slow", 1);
}, 240_000);
afterAll(async () => {
  await c?.close();
});

/** get is the status of a GET to the host without a key; 0 when no connection is taken. */
const get = (path: string) =>
  httpsRequest(`https://127.0.0.1:${c.state.hostPort}${path}`, {
    caFile: c.state.caCert,
    timeoutMs: 2000,
  }).then(
    (r) => r.status,
    () => 0,
  );
const pods = async (name: string) =>
  (await c.kube.listPods(NS, `${SANDBOX_POOL_LABEL}=${name}`)).items.filter(
    (p) => !p.metadata?.deletionTimestamp,
  );
/** marks are the pending-requests marks on a pool (the hosts' waiting creates). */
const marks = async (name: string) =>
  Object.keys((await c.kube.getPool(NS, name)).metadata?.annotations ?? {}).filter((k) =>
    k.startsWith(PENDING_REQUESTS_PREFIX),
  );
const create = (body: Record<string, unknown>) =>
  c.api("POST", "/sandboxes", { timeout: 300, ...body }, 60_000);
const idOf = (res: { body: string }) => (JSON.parse(res.body) as { sandboxId: string }).sandboxId;
/** restartWith stops the host (SIGTERM, as the tests before left it serving) and starts it with `env`. */
async function restartWith(env: Record<string, string>) {
  c.host.child.kill("SIGTERM");
  expect(await c.host.exited).toBe("0");
  await c.startHost(env);
}
const troubles = (h: HostProcess) => h.lines.filter((l) => /unhandled rejection|uncaught exception/.test(l));

/**
 * releaseAll releases each sandbox through the host and checks that the history records each once,
 * the ones `released` before too.
 */
async function releaseAll(name: string, size: number, held: string[], released: string[] = []) {
  for (const id of held) expect((await c.api("DELETE", `/sandboxes/${id}`)).status).toBe(204);
  const ids = [...held, ...released];
  await c.allIdle(NS, name, size, 90_000);
  const records = await until("every sandbox recorded", 30_000, async () => {
    const all = await c.history(NS);
    return ids.every((id) => all.some((r) => r.sandboxId === id)) && all;
  });
  for (const id of ids) expect(records.filter((r) => r.sandboxId === id)).toHaveLength(1);
}

describe("SIGTERM", () => {
  it("turns /readyz 503 at once, serves on through the settle, lets the creates under way end, and exits 0", async () => {
    expect(await get("/readyz")).toBe(200);
    const first = await create({ pool: `${NS}/drain` });
    expect(first.status).toBe(201);
    // Two creates wait for their sandboxes to run (5 s), a third for an idle pod (none is left).
    const running = [1, 2].map(() => create({ pool: `${NS}/drain`, wait: true, startupTimeout: 90 }));
    await until("every pod claimed", 20_000, async () =>
      (await pods("drain")).every((p) => phaseOf(p) === "starting" || phaseOf(p) === "running"),
    );
    const waiting = create({ pool: `${NS}/drain`, waitTimeout: 30 });
    await until("the waiting create's pending mark", 10_000, async () => (await marks("drain")).length === 1);

    const host = c.host;
    const t0 = Date.now();
    host.child.kill("SIGTERM");
    await until("/readyz 503", 1000, async () => (await get("/readyz")) === 503);
    // Through the settle the host is alive and serves: the first sandbox's release goes through,
    // and its pod, once reset, serves the waiting create.
    expect(await get("/healthz")).toBe(200);
    expect((await c.api("DELETE", `/sandboxes/${idOf(first)}`)).status).toBe(204);
    // Then it takes no new connection, while the creates under way go on.
    await until("new connections refused", SETTLE_S * 1000 + 3000, async () => (await get("/healthz")) === 0);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(SETTLE_S * 1000 - 100);

    const answers = await Promise.all([...running, waiting]);
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201]);
    expect(answers.slice(0, 2).map((a) => (JSON.parse(a.body) as { phase: string }).phase)).toEqual([
      "running",
      "running",
    ]);
    expect(await host.exited).toBe("0");
    expect(Date.now() - t0).toBeLessThan((SETTLE_S + GRACE_S + 5) * 1000);
    expect(await marks("drain")).toEqual([]);
    expect(troubles(host)).toEqual([]);

    await c.startHost();
    await releaseAll("drain", 3, answers.map(idOf), [idOf(first)]);
  });

  it("hands a waiting create's start back when the grace ends: a clean 503, and another host runs the sandbox", async () => {
    await restartWith({ AGENTBOX_SHUTDOWN_SETTLE_SECONDS: "0", AGENTBOX_SHUTDOWN_GRACE_SECONDS: "2" });
    // Its sandbox takes 10 s to start, its waiter-until is 90 s away: the grace cuts the wait.
    const starting = create({ pool: `${NS}/slow`, wait: true, startupTimeout: 90 });
    const claimed = await until("the claim, with its waiter-until", 20_000, async () => {
      const [pod] = await pods("slow");
      const waited = pod?.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION] !== undefined;
      return pod && phaseOf(pod) === "starting" && waited ? pod : undefined;
    });
    const waiterUntil = Date.parse(claimed.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION] ?? "");
    const id = claimed.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";
    const waiting = create({ pool: `${NS}/slow`, waitTimeout: 30 });
    await until("the waiting create's pending mark", 10_000, async () => (await marks("slow")).length === 1);

    const host = c.host;
    const t0 = Date.now();
    host.child.kill("SIGTERM");
    const [cut, gaveUp] = await Promise.all([starting, waiting]);
    // The claimed sandbox is the caller's, still starting: 503 ShuttingDown with it, no retry hint.
    expect(cut.status).toBe(503);
    const error = (
      JSON.parse(cut.body) as { error: { code: string; sandbox: { sandboxId: string; phase: string } } }
    ).error;
    expect([error.code, error.sandbox.sandboxId, error.sandbox.phase]).toEqual([
      "ShuttingDown",
      id,
      "starting",
    ]);
    expect(cut.headers["retry-after"]).toBeUndefined();
    // The create that had no pod yet may simply retry (on another host).
    expect(gaveUp.status).toBe(503);
    expect(gaveUp.headers["retry-after"]).toBe("1");
    expect(await host.exited).toBe("0");
    expect(Date.now() - t0).toBeLessThan((0 + 2 + 5) * 1000);
    expect(await marks("slow")).toEqual([]);
    expect(troubles(host)).toEqual([]);

    // No waiter-until holds the start back: the replica's reconcile completes it once the kubelet
    // ran the new containers, long before the create's wait would have ended.
    const now = await c.kube.getPod(NS, claimed.metadata?.name ?? "");
    expect(now.metadata?.annotations?.[WAITER_UNTIL_ANNOTATION]).toBeUndefined();
    const ran = await until("the sandbox running", 30_000, async () => {
      const pod = (await pods("slow")).find((p: V1Pod) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === id);
      return pod && phaseOf(pod) === "running";
    });
    expect(ran).toBe(true);
    expect(Date.now()).toBeLessThan(waiterUntil - 30_000);

    await c.startHost();
    await releaseAll("slow", 1, [id]);
  });

  it("exits at once on a second signal", async () => {
    await restartWith({ AGENTBOX_SHUTDOWN_SETTLE_SECONDS: "30" });
    const host = c.host;
    host.child.kill("SIGTERM");
    await until("/readyz 503", 1000, async () => (await get("/readyz")) === 503);
    const t0 = Date.now();
    host.child.kill("SIGTERM");
    expect(await host.exited).toBe("143");
    expect(Date.now() - t0).toBeLessThan(2000);
  });
});
