import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOSSES_BEFORE_FRESH_LOOK } from "../../functions/api/claim-from.ts";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { teamSandboxes } from "../../functions/api/team-usage.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { isReady, POOLS, phaseOf, poolObject, reconcileUntil, testDeps } from "./support/steps.ts";

// The native REST API (/v1) served by the test host, against the real apiserver. The pools live
// in audit-* namespaces, so the host's own audit-driven reconciles move the sandboxes along and
// its history store answers /v1/history.

const { core, custom, cluster } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
let ns: string;
const cleanups: (() => Promise<void>)[] = [];
const key: Record<string, string> = {};
const base = `https://127.0.0.1:${cluster.hostPort}/v1`;

// The 500-way burst queues creates behind each other on 2 cores; a slow answer is not a wrong one,
// so the client waits up to two minutes (the test asserts outcomes, benchmarks measure time).
function api(method: string, path: string, who: string | undefined, body?: unknown) {
  return httpsRequest(`${base}${path}`, cluster.caCert, {
    timeoutMs: 120_000,
    method,
    headers: { "content-type": "application/json", ...(who ? { "x-api-key": key[who] ?? who } : {}) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

const pods = async (pool: string) =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}` }))
    .items;

async function readyPool(
  name: string,
  replicas: number,
  spec: Record<string, unknown> = {},
): Promise<V1Pod[]> {
  await custom.createNamespacedCustomObject({
    ...POOLS,
    namespace: ns,
    body: poolObject(ns, name, replicas, spec),
  });
  return until(`${replicas} idle pods in ${name}`, 90_000, async () => {
    const ps = await pods(name);
    return ps.length === replicas && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  });
}

beforeAll(async () => {
  const created = await newNamespace(core, "audit");
  ns = created.ns;
  cleanups.push(created.cleanup);
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  const mint = (team: string, user: string, admin = false) =>
    createApiKey(
      { kube: deps.kube, apiKeys: keys, now: () => new Date() },
      { team, user, ...(admin ? { admin } : {}) },
    );
  key.alice = await mint("research", "alice");
  key.bob = await mint("other", "bob");
  key.admin = await mint("ops", "root", true);
});
afterAll(async () => {
  for (const c of cleanups) await c();
  deps.history.close();
});

describe("sandbox API", () => {
  it("creates a sandbox, runs it, deletes it, and the pod returns idle with one history record", async () => {
    await readyPool("api", 2);
    const created = await api("POST", "/sandboxes", "alice", { pool: `${ns}/api`, metadata: { run: "7" } });
    expect(created.status).toBe(201);
    // Server-Timing takes the create apart: the key check, the target's reads, the claim.
    const timing = String(created.headers["server-timing"]);
    for (const stage of ["key", "target", "create", "total"])
      expect(timing).toMatch(new RegExp(`${stage};dur=`));
    const sbx = JSON.parse(created.body) as { sandboxId: string; phase: string; pool: string; team: string };
    expect(sbx).toMatchObject({ phase: "starting", pool: "api", team: "research" });
    const running = await until("running", 30_000, async () => {
      const r = JSON.parse((await api("GET", `/sandboxes/${sbx.sandboxId}`, "alice")).body) as {
        phase?: string;
      };
      return r.phase === "running" ? r : undefined;
    });
    expect(running).toMatchObject({ sandboxId: sbx.sandboxId, metadata: { run: "7" } });
    expect((await api("DELETE", `/sandboxes/${sbx.sandboxId}`, "alice")).status).toBe(204);
    expect((await api("DELETE", `/sandboxes/${sbx.sandboxId}`, "alice")).status).toBe(204);
    const history = await until("history record", 30_000, async () => {
      const page = JSON.parse((await api("GET", `/history?pool=api&namespace=${ns}`, "alice")).body) as {
        records: { sandboxId: string }[];
      };
      return page.records.length ? page.records : undefined;
    });
    expect(history.map((r) => r.sandboxId)).toEqual([sbx.sandboxId]);
    // The record is stored before the pod returns to idle, and GET reads the watch cache: the
    // sandbox shows as stopping until both have happened, then it is gone.
    await until("the sandbox gone", 30_000, async () =>
      (await api("GET", `/sandboxes/${sbx.sandboxId}`, "alice")).status === 404 ? true : undefined,
    );
    const idle = await until("pod idle", 30_000, async () =>
      (await pods("api")).every((p) => phaseOf(p) === "idle") ? true : undefined,
    );
    expect(idle).toBe(true);
  });

  it("takes the pool's default timeouts, shows the pod's Warning events, and records a release before the start as Canceled", async () => {
    const [idlePod] = await readyPool("defaults", 1, {
      defaultIdleTimeout: "15m",
      defaultStartupTimeout: "90s",
    });
    const created = await api("POST", "/sandboxes", "alice", {
      pool: `${ns}/defaults`,
      image: "registry.local/sandbox/base:unpullable",
    });
    expect(created.status).toBe(201);
    const sbx = JSON.parse(created.body) as {
      sandboxId: string;
      idleTimeoutSeconds?: number;
      startupTimeoutSeconds?: number;
    };
    expect([sbx.idleTimeoutSeconds, sbx.startupTimeoutSeconds]).toEqual([900, 90]);
    // A kubelet reports a failed pull as a Warning Event about the pod; kwok does not, so the test
    // posts the event a kubelet would.
    await core.createNamespacedEvent({
      namespace: ns,
      body: {
        metadata: { name: `${idlePod?.metadata?.name}.pull-failed` },
        involvedObject: {
          kind: "Pod",
          namespace: ns,
          name: idlePod?.metadata?.name,
          uid: idlePod?.metadata?.uid,
        },
        type: "Warning",
        reason: "Failed",
        message: 'Failed to pull image "registry.local/sandbox/base:unpullable": not found',
        lastTimestamp: new Date(),
        count: 2,
        source: { component: "kubelet" },
      },
    });
    const view = JSON.parse((await api("GET", `/sandboxes/${sbx.sandboxId}`, "alice")).body) as {
      phase: string;
      detail?: { events?: { reason: string; message: string; count: number }[] };
    };
    expect(view.phase).toBe("starting");
    expect(view.detail?.events).toEqual([
      expect.objectContaining({ reason: "Failed", count: 2, message: expect.stringContaining("unpullable") }),
    ]);

    expect((await api("DELETE", `/sandboxes/${sbx.sandboxId}`, "alice")).status).toBe(204);
    const [record] = await until("the Canceled record", 30_000, async () => {
      const page = JSON.parse((await api("GET", `/history?pool=defaults&namespace=${ns}`, "alice")).body) as {
        records: { sandboxId: string; stopReason: string }[];
      };
      return page.records.length ? page.records : undefined;
    });
    expect(record).toMatchObject({ sandboxId: sbx.sandboxId, stopReason: "Canceled" });
  });

  it("keeps tenants apart: another tenant's sandbox is a 404 everywhere", async () => {
    await readyPool("tenancy", 1);
    const sbx = JSON.parse((await api("POST", "/sandboxes", "alice", { pool: `${ns}/tenancy` })).body) as {
      sandboxId: string;
    };
    expect((await api("GET", `/sandboxes/${sbx.sandboxId}`, "bob")).status).toBe(404);
    expect((await api("DELETE", `/sandboxes/${sbx.sandboxId}`, "bob")).status).toBe(404);
    expect((await api("POST", `/sandboxes/${sbx.sandboxId}/timeout`, "bob", { timeout: 60 })).status).toBe(
      404,
    );
    const bobList = JSON.parse((await api("GET", "/sandboxes", "bob")).body) as {
      sandboxes: { sandboxId: string }[];
    };
    expect(bobList.sandboxes.map((s) => s.sandboxId)).not.toContain(sbx.sandboxId);
    const aliceList = JSON.parse((await api("GET", `/sandboxes?pool=${ns}/tenancy`, "alice")).body) as {
      sandboxes: { sandboxId: string }[];
    };
    expect(aliceList.sandboxes.map((s) => s.sandboxId)).toContain(sbx.sandboxId);
    expect((await api("GET", `/sandboxes/${sbx.sandboxId}`, "admin")).status).toBe(200);
    const timed = await api("POST", `/sandboxes/${sbx.sandboxId}/timeout`, "alice", { idleTimeout: 120 });
    expect(JSON.parse(timed.body).idleTimeoutSeconds).toBe(120);
    const lifetime = await api("POST", `/sandboxes/${sbx.sandboxId}/timeout`, "alice", { timeout: 600 });
    const endAt = Date.parse(JSON.parse(lifetime.body).endAt);
    expect(endAt - Date.now()).toBeGreaterThan(590_000);
    expect(endAt - Date.now()).toBeLessThanOrEqual(600_000);
  });

  it("hides templates from tenants their visibility rules exclude, and lists the choices on a 404", async () => {
    const template = `private-${randomBytes(3).toString("hex")}`;
    await custom.createClusterCustomObject({
      group: "agents.navix.sh",
      version: "v1alpha1",
      plural: "sandboxtemplates",
      body: {
        apiVersion: "agents.navix.sh/v1alpha1",
        kind: "SandboxTemplate",
        metadata: { name: template },
        spec: {
          visibility: { rules: [{ team: "research" }] },
          template: { spec: { containers: [{ name: "sandbox", image: "registry.local/x:1" }] } },
        },
      },
    });
    cleanups.push(async () => {
      await custom
        .deleteClusterCustomObject({
          group: "agents.navix.sh",
          version: "v1alpha1",
          plural: "sandboxtemplates",
          name: template,
        })
        .catch(() => {});
    });
    await readyPool("private", 1, { templateName: template });
    const denied = await api("POST", "/sandboxes", "bob", { pool: `${ns}/private` });
    expect(denied.status).toBe(404);
    expect(JSON.parse(denied.body).error.choices).not.toContain(`${ns}/private`);
    expect((await api("POST", "/sandboxes", "bob", { template })).status).toBe(404);
    const allowed = await api("POST", "/sandboxes", "alice", { template });
    expect(allowed.status).toBe(201);
    const unknown = await api("POST", "/sandboxes", "alice", { pool: `${ns}/nope` });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error.choices).toContain(`${ns}/private`);
  });

  it("with wait, answers once the sandbox runs, or 504 with the diagnosis when it cannot start", async () => {
    await readyPool("waiting", 2);
    const ok = await api("POST", "/sandboxes", "alice", {
      pool: `${ns}/waiting`,
      wait: true,
      startupTimeout: 30,
    });
    expect(ok.status).toBe(201);
    expect(JSON.parse(ok.body)).toMatchObject({ phase: "running" });
    const stuck = await api("POST", "/sandboxes", "alice", {
      pool: `${ns}/waiting`,
      image: "registry.local/sandbox/base:unpullable",
      wait: true,
      startupTimeout: 3,
    });
    expect(stuck.status).toBe(504);
    const error = JSON.parse(stuck.body).error as {
      code: string;
      message: string;
      sandbox: { phase: string; failure?: { reason: string } };
    };
    expect(error.code).toBe("StartupTimeout");
    expect(error.message).toMatch(/ImagePullBackOff|ErrImagePull/);
    // The wait and the startup timeout end at the same moment: the sandbox is either still
    // starting, or already released by the timeout (stopping, to be replaced, as StartupTimeout).
    if (error.sandbox.phase === "stopping") expect(error.sandbox.failure?.reason).toBe("StartupTimeout");
    else expect(error.sandbox.phase).toBe("starting");
  });

  it("releases a sandbox idle past its timeout (IdleTimeout record); activity reports keep it alive", async () => {
    // A namespace the test host does not reconcile: the test drives the steps with its own clock.
    const quiet = await newNamespace(core, "idle");
    cleanups.push(quiet.cleanup);
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: quiet.ns,
      body: poolObject(quiet.ns, "idle", 2),
    });
    const ready = (ps: V1Pod[]) => ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
    const list = async () =>
      (
        await core.listNamespacedPod({
          namespace: quiet.ns,
          labelSelector: "agentbox.navix.sh/sandbox-pool=idle",
        })
      ).items;
    await reconcileUntil(deps, quiet.ns, "idle", "idle pods", async () => ready(await list()));
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await api("POST", "/sandboxes", "alice", { pool: `${quiet.ns}/idle`, idleTimeout: 30 });
      expect(r.status).toBe(201);
      ids.push((JSON.parse(r.body) as { sandboxId: string }).sandboxId);
    }
    await reconcileUntil(deps, quiet.ns, "idle", "both running", async () =>
      (await list()).every((p) => phaseOf(p) === "running"),
    );
    // The proxy reports activity for the first one 110 s from now, for the second one 40 s from
    // now (the default idle-release mode, "reported", releases only sandboxes with activity
    // reported after their start).
    const active = new Date(Date.now() + 110_000).toISOString();
    const report = await api("POST", "/activity", "alice", {
      sandboxes: [
        { id: ids[0], lastActive: active },
        { id: ids[1], lastActive: new Date(Date.now() + 40_000).toISOString() },
        { id: "sbx-unknown", lastActive: active },
      ],
    });
    expect(JSON.parse(report.body)).toEqual({ recorded: 2, unchanged: 0, unknown: ["sbx-unknown"] });
    const again = await api("POST", "/activity", "alice", {
      sandboxes: [{ id: ids[0], lastActive: active }],
    });
    expect(JSON.parse(again.body)).toMatchObject({ recorded: 0, unchanged: 1 });
    expect(
      (await api("POST", "/activity", "bob", { sandboxes: [{ id: ids[0], lastActive: active }] })).body,
    ).toContain(ids[0]);
    deps.clock.offsetMs = 120_000;
    await reconcileUntil(deps, quiet.ns, "idle", "the idle one released and back to idle", async () => {
      const record = await deps.history.get(ids[1] ?? "");
      return record && (await list()).filter((p) => phaseOf(p) === "idle").length === 1 ? record : undefined;
    });
    deps.clock.offsetMs = 0;
    expect(await deps.history.get(ids[1] ?? "")).toMatchObject({
      stopReason: "Released",
      failureReason: "IdleTimeout",
    });
    expect(await deps.history.get(ids[0] ?? "")).toBeUndefined();
  });

  it("a create with waitTimeout gets the pod a release frees, and stamps the pool's demand", async () => {
    await readyPool("single", 1);
    const first = JSON.parse((await api("POST", "/sandboxes", "alice", { pool: `${ns}/single` })).body) as {
      sandboxId: string;
      pod: string;
    };
    const none = await api("POST", "/sandboxes", "alice", { pool: `${ns}/single` });
    expect(none.status).toBe(503);
    // The create stamps its pool's last-sandbox-create-time beside its answer, not before it.
    await until("the pool's create stamp", 30_000, async () => {
      const pool = (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name: "single" })) as {
        metadata: { annotations?: Record<string, string> };
      };
      return pool.metadata.annotations?.["agentbox.navix.sh/last-sandbox-create-time"];
    });
    const waiter = api("POST", "/sandboxes", "alice", { pool: `${ns}/single`, waitTimeout: 60 });
    await until(
      "the first sandbox running",
      30_000,
      async () =>
        ((await pods("single"))[0] && phaseOf((await pods("single"))[0]!) === "running") || undefined,
    );
    // While it waits, the host publishes it, and the pool's status counts it.
    const getPool = async () =>
      (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name: "single" })) as {
        metadata: { annotations?: Record<string, string> };
        status?: { pendingRequests?: number };
      };
    const marks = (p: { metadata: { annotations?: Record<string, string> } }) =>
      Object.keys(p.metadata.annotations ?? {}).filter((k) =>
        k.startsWith("pending-requests.agentbox.navix.sh/"),
      );
    await until(
      "pendingRequests 1",
      30_000,
      async () => (await getPool()).status?.pendingRequests === 1 || undefined,
    );
    expect(marks(await getPool())).toHaveLength(1);
    expect((await api("DELETE", `/sandboxes/${first.sandboxId}`, "alice")).status).toBe(204);
    const second = await waiter;
    expect(second.status).toBe(201);
    const got = JSON.parse(second.body) as { sandboxId: string; pod: string };
    expect(got.pod).toBe(first.pod);
    expect(got.sandboxId).not.toBe(first.sandboxId);
    await until("pendingRequests gone", 30_000, async () => {
      const p = await getPool();
      return ((p.status?.pendingRequests ?? 0) === 0 && marks(p).length === 0) || undefined;
    });
  });

  it("claims racing a scale-down: a pod is either claimed or deleted, never both", async () => {
    const quiet = await newNamespace(core, "shrink");
    cleanups.push(quiet.cleanup);
    const list = async () =>
      (
        await core.listNamespacedPod({
          namespace: quiet.ns,
          labelSelector: "agentbox.navix.sh/sandbox-pool=shrink",
        })
      ).items;
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: quiet.ns,
      body: poolObject(quiet.ns, "shrink", 8),
    });
    await reconcileUntil(deps, quiet.ns, "shrink", "8 idle pods", async () => {
      const ps = await list();
      return ps.length === 8 && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
    });
    await custom.patchNamespacedCustomObject({
      ...POOLS,
      namespace: quiet.ns,
      name: "shrink",
      body: [{ op: "replace", path: "/spec/replicas", value: 0 }],
    });
    deps.clock.offsetMs = 400_000; // idle long enough: every pod gets its scale-down mark
    await reconcileUntil(deps, quiet.ns, "shrink", "all marked", async () =>
      (await list()).every((p) => p.metadata?.annotations?.["agentbox.navix.sh/scale-down-protected"]),
    );
    deps.clock.offsetMs = 420_000; // past the protection window for the steps
    const before = (await list()).map((p) => p.metadata?.name ?? "");
    expect(before).toHaveLength(8);
    const [claims] = await Promise.all([
      Promise.all(
        Array.from({ length: 8 }, () => api("POST", "/sandboxes", "alice", { pool: `${quiet.ns}/shrink` })),
      ),
      (async () => {
        for (let i = 0; i < 3; i++) await reconcilePool(deps, quiet.ns, "shrink");
      })(),
    ]);
    // One more run past the window: whatever no claim took is deleted now.
    await reconcilePool(deps, quiet.ns, "shrink");
    deps.clock.offsetMs = 0;
    expect(claims.every((r) => r.status === 201 || r.status === 503)).toBe(true);
    const claimedPods = claims
      .filter((r) => r.status === 201)
      .map((r) => (JSON.parse(r.body) as { pod: string }).pod);
    expect(new Set(claimedPods).size).toBe(claimedPods.length);
    const now = await list();
    // Something happened to every pod, and only one thing: claimed, or deleted (gone or going).
    const deleted = before.filter((name) => {
      const pod = now.find((p) => p.metadata?.name === name);
      return !pod || pod.metadata?.deletionTimestamp !== undefined;
    });
    expect(deleted.filter((name) => claimedPods.includes(name))).toEqual([]);
    expect([...claimedPods, ...deleted].sort()).toEqual([...before].sort());
    for (const name of claimedPods) {
      const pod = now.find((p) => p.metadata?.name === name);
      expect(pod, `claimed pod ${name} still there`).toBeDefined();
      expect(pod?.metadata?.deletionTimestamp).toBeUndefined();
      expect(pod?.metadata?.annotations?.["agentbox.navix.sh/scale-down-protected"]).toBeUndefined();
    }
    // No other pod was claimed: the rest are deleted, or idle and still marked.
    for (const pod of now.filter((p) => !claimedPods.includes(p.metadata?.name ?? ""))) {
      if (!pod.metadata?.deletionTimestamp) expect(phaseOf(pod)).toBe("idle");
    }
  });

  it("authenticates every request", async () => {
    expect((await api("GET", "/sandboxes", undefined)).status).toBe(401);
    // An anonymous create learns nothing from the timing: no key or target stage, only the total.
    const anonymous = await api("POST", "/sandboxes", "abx_not-a-key", { pool: `${ns}/api` });
    expect(anonymous.status).toBe(401);
    expect(String(anonymous.headers["server-timing"])).not.toMatch(/key|target|create/);
    expect((await api("GET", "/sandboxes", "abx_not-a-key")).status).toBe(401);
    expect((await api("GET", "/openapi.json", undefined)).status).toBe(401);
    const doc = await api("GET", "/openapi.json", "alice");
    expect(doc.status).toBe(200);
    expect(JSON.parse(doc.body).paths).toHaveProperty("/sandboxes/{id}");
  });

  it("answers fuzzed and malformed bodies with a 4xx naming the problem, never a 5xx", async () => {
    const bodies: unknown[] = [
      "not json",
      "{",
      "[]",
      "null",
      42,
      {},
      { pool: 7 },
      { pool: "no-slash" },
      { pool: `${ns}/api`, template: "both" },
      { pool: `${ns}/api`, idleTimeout: -1 },
      { pool: `${ns}/api`, startupTimeout: "soon" },
      { pool: `${ns}/api`, envVars: { "bad key": "x" } },
      { pool: `${ns}/api`, metadata: { k: 1 } },
      { pool: `${ns}/api`, image: "x", containerImages: { sandbox: "y" } },
      { pool: `${ns}/api`, containerImages: { ghost: "y" } },
      { pool: "x".repeat(70_000) },
    ];
    for (let i = 0; i < 40; i++) {
      const random = randomBytes(64).toString("latin1");
      bodies.push(random, { pool: random, metadata: { [random.slice(0, 10)]: random } });
    }
    for (const body of bodies) {
      const res = await api("POST", "/sandboxes", "alice", body);
      expect(
        res.status,
        `body ${JSON.stringify(body).slice(0, 80)} → ${res.body.slice(0, 200)}`,
      ).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(JSON.parse(res.body).error.code).toBeTypeOf("string");
    }
    const noField = await api("POST", "/sandboxes", "alice", { pool: 7 });
    expect(JSON.parse(noField.body).error.fields.map((f: { path: string }) => f.path)).toContain("pool");
    for (const q of ["?limit=0", "?limit=x", "?phase=sleeping", "?metadata=novalue"]) {
      expect((await api("GET", `/sandboxes${q}`, "alice")).status).toBe(400);
    }
  });

  it("refuses an image from outside the template's repository, or any for a sidecar: 400 naming the rule, nothing claimed", async () => {
    await readyPool("images", 1, {
      template: {
        spec: {
          containers: [
            { name: "sandbox", image: "registry.local/sandbox/base:1" },
            { name: "proxy", image: "registry.local/sandbox/proxy:1" },
          ],
        },
      },
    });
    const pool = `${ns}/images`;
    const evil = await api("POST", "/sandboxes", "alice", { pool, image: "evil.example/anything:1" });
    expect(evil.status).toBe(400);
    expect(JSON.parse(evil.body).error.message).toMatch(
      /^image: image "evil\.example\/anything:1" .* not allowed in container "sandbox" \(allowed: registry\.local\/sandbox\/base, any tag or digest; .*tenant-images/,
    );
    const sidecar = await api("POST", "/sandboxes", "alice", {
      pool,
      containerImages: { proxy: "registry.local/sandbox/proxy:2" },
    });
    expect(sidecar.status).toBe(400);
    expect(JSON.parse(sidecar.body).error.message).toContain(
      'containerImages.proxy: container "proxy" does not take a tenant\'s image',
    );
    expect((await pods("images")).map(phaseOf)).toEqual(["idle"]);
    // Another tag of the template's own repository is the tenant's to choose.
    const allowed = await api("POST", "/sandboxes", "alice", {
      pool,
      image: "registry.local/sandbox/base:2",
    });
    expect(allowed.status, allowed.body).toBe(201);
    const { sandboxId } = JSON.parse(allowed.body) as { sandboxId: string };
    expect((await api("DELETE", `/sandboxes/${sandboxId}`, "alice")).status).toBe(204);
  });

  it("500 concurrent creates against 500 idle pods: each pod claimed once, every answer a distinct sandbox or a clean 503", async () => {
    const N = Number(process.env.AGENTBOX_BURST ?? 500);
    await readyPool("burst", N);
    const results = await Promise.all(
      Array.from({ length: N }, () => api("POST", "/sandboxes", "alice", { pool: `${ns}/burst` })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 503)).toBe(true);
    const created = results
      .filter((r) => r.status === 201)
      .map((r) => JSON.parse(r.body) as { sandboxId: string; pod: string });
    expect(new Set(created.map((s) => s.sandboxId)).size).toBe(created.length);
    expect(new Set(created.map((s) => s.pod)).size).toBe(created.length);
    const claimedPods = (await pods("burst")).filter((p) => phaseOf(p) !== "idle");
    expect(claimedPods.length).toBe(created.length);
    // A 503 is clean: nothing was claimed for it, and retrying it gets one of the pods still idle.
    expect(created.length).toBeGreaterThan(N / 2);
    const retried: { sandboxId: string; pod: string }[] = [];
    for (let i = 0; i < statuses.filter((s) => s === 503).length; i++) {
      const again = await until("a retried create", 30_000, async () => {
        const r = await api("POST", "/sandboxes", "alice", { pool: `${ns}/burst` });
        return r.status === 201 ? (JSON.parse(r.body) as { sandboxId: string; pod: string }) : undefined;
      });
      retried.push(again);
    }
    const all = [...created, ...retried];
    expect(new Set(all.map((s) => s.pod)).size).toBe(N);
    expect(new Set(all.map((s) => s.sandboxId)).size).toBe(N);
  }, 240_000);

  it("a burst twice the pool's size fails fast: the pool's worth served, the rest a 503 after a fresh look", async () => {
    const N = 30;
    await readyPool("double", N);
    const results = await Promise.all(
      Array.from({ length: 2 * N }, () => api("POST", "/sandboxes", "alice", { pool: `${ns}/double` })),
    );
    const created = results
      .filter((r) => r.status === 201)
      .map((r) => (JSON.parse(r.body) as { pod: string }).pod);
    const refused = results.filter((r) => r.status === 503);
    expect(created.length + refused.length).toBe(2 * N);
    expect(new Set(created).size).toBe(created.length);
    expect(created.length).toBe(N);
    // Each 503 stopped once a consistent list showed no idle pod: a few lost races, not a budget
    // of 48 claim patches on pods the cache still showed.
    const tried = refused.map((r) => Number(/tried (\d+)/.exec(JSON.parse(r.body).error.message)?.[1]));
    expect(tried.every((n) => Number.isInteger(n))).toBe(true);
    expect(Math.max(...tried)).toBeLessThanOrEqual(3 * LOSSES_BEFORE_FRESH_LOOK);
  }, 120_000);

  it("caps a team's sandboxes: beyond its limit a create gets a 429 naming it, and a release makes room", async () => {
    await readyPool("capped", 3);
    const capped = await createApiKey(
      { kube: deps.kube, apiKeys: keys, now: () => new Date() },
      { team: "capped", user: "carol" },
    );
    const create = () => api("POST", "/sandboxes", capped, { pool: `${ns}/capped` });
    const first = await create();
    const second = await create();
    expect([first.status, second.status]).toEqual([201, 201]);
    // The count comes from the watch cache: wait until it shows both claims (milliseconds).
    await until(
      "the watch cache to show both claims",
      10_000,
      async () => (await teamSandboxes(deps, "capped")) === 2,
    );
    const third = await create();
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body).error).toEqual({
      code: "TooManySandboxes",
      message:
        'team "capped" holds 2 sandboxes, its limit is 2 (the host\'s team sandbox limit); release one first',
    });
    // The refused create took nothing: the third pod is still idle, and another team gets it.
    expect((await pods("capped")).filter((p) => phaseOf(p) === "idle")).toHaveLength(1);
    expect((await api("POST", "/sandboxes", "alice", { pool: `${ns}/capped` })).status).toBe(201);
    const id = JSON.parse(first.body).sandboxId as string;
    expect((await api("DELETE", `/sandboxes/${id}`, capped)).status).toBe(204);
    // A release makes room: once the freed pod is idle again, the team gets it.
    const again = await until("a create after the release", 20_000, async () => {
      const r = await create();
      return r.status === 201 ? r : undefined;
    });
    expect(again.status).toBe(201);
    // Leave the team nothing held: a rerun against the same cluster starts from zero.
    for (const held of [second, again])
      expect((await api("DELETE", `/sandboxes/${JSON.parse(held.body).sandboxId}`, capped)).status).toBe(204);
  });
});
