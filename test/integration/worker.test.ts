import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import { parseExposition, sampleOf } from "../../lib/metrics/parse-exposition.ts";
import { createTemplateAndEnv, ENVS, TEMPLATES } from "./support/envs.ts";
import { kube, newNamespace, until, watchPodUntil } from "./support/kube.ts";
import { namespacedToken } from "./support/scoped-token.ts";
import { isReady, POOLS, phaseOf, poolObject, testDeps } from "./support/steps.ts";
import { buildWorker, cron, DOWN_HOST, dispatch, startWorker } from "./support/worker.ts";

// The Worker host (hosts/worker/index.ts) bundled by wrangler and run in workerd (Miniflare),
// against the real local control plane: its outbound requests to the apiserver go through a
// stand-in for the tunnel, its history is Miniflare's D1 (real SQLite). Its tick is scoped to this
// file's namespace (TICK_NAMESPACE), so it never touches other files' pools.

const { core, custom, cluster, kc } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
let script: string;
let ns: string;
let mf: Miniflare;
let apiKey: string;
const cleanups: (() => Promise<void>)[] = [];

const call = (
  path: string,
  init: { method?: string; body?: string; key?: string; headers?: Record<string, string> } = {},
) =>
  dispatch(mf, path, {
    ...(init.method ? { method: init.method } : {}),
    ...(init.body ? { body: init.body } : {}),
    headers: {
      "content-type": "application/json",
      ...(init.key ? { "x-api-key": init.key } : {}),
      ...init.headers,
    },
  });
const pods = async (namespace = ns, pool = "w") =>
  (await core.listNamespacedPod({ namespace, labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}` }))
    .items;

/**
 * tickUntil runs a Worker's cron handler (this file's Worker unless told) until check holds (the
 * tick is the Worker's reconcile). An invocation that fails ends the wait at once and fails the test.
 */
async function tickUntil<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  worker: () => Miniflare = () => mf,
): Promise<T> {
  const got = await until(what, 60_000, async () => {
    const tick = await cron(worker());
    if (tick.outcome !== "ok") return { tick };
    const value = await check();
    return value ? { tick, value } : undefined;
  });
  expect(got.tick.outcome).toBe("ok");
  return got.value as T;
}

beforeAll(async () => {
  script = await buildWorker();
  const created = await newNamespace(core, "worker");
  ns = created.ns;
  cleanups.push(created.cleanup);
  mf = await startWorker(script, cluster, { TICK_NAMESPACE: ns, CLUSTER_ID: "local" });
  cleanups.push(() => mf.dispose());
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  apiKey = await createApiKey(
    { kube: deps.kube, apiKeys: keys, now: () => new Date() },
    { team: "edge", user: "worker" },
  );
}, 180_000);
const template = `worker-tmpl-${process.pid}`;
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
  for (const c of cleanups.reverse()) await c().catch(() => {});
  deps.history.close();
});

describe("the Worker in workerd", () => {
  it("a scheduled invocation reconciles a pool on the real control plane", async () => {
    await custom.createNamespacedCustomObject({ ...POOLS, namespace: ns, body: poolObject(ns, "w", 2) });
    const ready = await tickUntil("2 idle, ready pods and a Ready status", async () => {
      const ps = await pods();
      const pool = (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name: "w" })) as {
        status?: { idleReplicas?: number };
      };
      return ps.length === 2 &&
        ps.every((p) => phaseOf(p) === "idle" && isReady(p)) &&
        pool.status?.idleReplicas === 2
        ? ps
        : undefined;
    });
    expect(ready.map((p) => p.metadata?.name).sort()).toEqual(["w-0", "w-1"]);
  });

  it("serves the pool gauges on /metrics behind its token, from one list of pools", async () => {
    expect((await call("/metrics")).status).toBe(401);
    const res = await call("/metrics", { headers: { authorization: `Bearer ${cluster.functionsToken}` } });
    expect(res.status).toBe(200);
    const s = parseExposition(await res.text());
    const w = { namespace: ns, pool: "w", sandbox_env: "" };
    expect(sampleOf(s, "agentbox_sandboxpool_replicas_desired", w)).toBe(2);
    expect(sampleOf(s, "agentbox_sandboxpool_replicas_idle", w)).toBe(2);
    expect(sampleOf(s, "agentbox_sandboxpool_replicas_running", w)).toBe(0);
  });

  it("a scheduled invocation materialises an Env's member pool (CLUSTER_ID), which /functions runs too", async () => {
    await createTemplateAndEnv(ns, template, "edge", [{ name: "edge-a", spec: { replicas: 1 } }]);
    await tickUntil("the Env Ready with its member's pod", async () => {
      const env = (await custom.getNamespacedCustomObject({
        ...ENVS,
        namespace: ns,
        name: "edge",
      })) as SandboxEnv;
      return (
        env.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" &&
        env.status.idleReplicas === 1
      );
    });
    const manual = await call(`/functions/reconcile-env?namespace=${ns}&env=edge`, {
      method: "POST",
      headers: { authorization: `Bearer ${cluster.functionsToken}` },
    });
    expect(manual.status).toBe(200);
    expect(((await manual.json()) as { report: { found: boolean } }).report.found).toBe(true);

    // Without CLUSTER_ID the Env step refuses, naming the setting; the pools still tick.
    const noId = await startWorker(script, cluster, { TICK_NAMESPACE: ns });
    try {
      const refused = await noId.dispatchFetch(
        `https://worker.test/functions/reconcile-env?namespace=${ns}&env=edge`,
        {
          method: "POST",
          headers: { authorization: `Bearer ${cluster.functionsToken}` },
        },
      );
      expect(refused.status).toBe(500);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
        /CLUSTER_ID on the Worker/,
      );
      expect((await cron(noId)).outcome).toBe("ok");
    } finally {
      await noId.dispose();
    }
  });

  it("with a token scoped to TICK_NAMESPACE, the tick reconciles that namespace and nothing else", async () => {
    const scoped = await newNamespace(core, "worker-scoped");
    const elsewhere = await newNamespace(core, "worker-else");
    cleanups.push(scoped.cleanup, elsewhere.cleanup);
    const token = await namespacedToken(kc, core, scoped.ns);
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: scoped.ns,
      body: poolObject(scoped.ns, "s", 1),
    });
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: elsewhere.ns,
      body: poolObject(elsewhere.ns, "e", 1),
    });
    const worker = await startWorker(script, cluster, { KUBE_TOKEN: token, TICK_NAMESPACE: scoped.ns });
    cleanups.push(() => worker.dispose());
    await tickUntil(
      "the scoped pool's pod",
      async () => (await pods(scoped.ns, "s")).length === 1,
      () => worker,
    );
    expect(await pods(elsewhere.ns, "e")).toEqual([]);
    const other = (await custom.getNamespacedCustomObject({
      ...POOLS,
      namespace: elsewhere.ns,
      name: "e",
    })) as {
      status?: unknown;
    };
    expect(other.status).toBeUndefined();
  });

  it("shares the API key reads among an isolate's requests and runs no DDL: D1 has the migrations", async () => {
    const keySecret = `/api/v1/namespaces/${keys.namespace}/secrets/${keys.name}`;
    let keyReads = 0;
    const worker = await startWorker(script, cluster, { TICK_NAMESPACE: ns }, (req) => {
      if (req.method === "GET" && new URL(req.url).pathname === keySecret) keyReads++;
    });
    cleanups.push(() => worker.dispose());
    const history = async () => {
      const res = await worker.dispatchFetch(`https://worker.test/v1/history?namespace=${ns}`, {
        headers: { "x-api-key": apiKey },
      });
      await res.text();
      return res.status;
    };
    expect(await history()).toBe(200);
    // A schema statement run per request would bring this index back (the Worker runs none).
    const d1 = await worker.getD1Database("HISTORY");
    await d1.prepare("DROP INDEX sandbox_history_time").run();
    const answers = await Promise.all(Array.from({ length: 6 }, history));
    expect(answers).toEqual(Array(6).fill(200));
    const index = await d1
      .prepare("SELECT name FROM sqlite_master WHERE name = 'sandbox_history_time'")
      .first();
    expect(index).toBeNull();
    // 7 key checks: one read of the keys Secret shared by all (two if a second passed meanwhile).
    expect(keyReads).toBeGreaterThan(0);
    expect(keyReads).toBeLessThanOrEqual(2);
  });

  it("serves the admission and audit webhooks, authenticated by the callback token", async () => {
    const review = {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "u-w",
        kind: { group: "agents.navix.sh", version: "v1alpha1", kind: "SandboxPool" },
        operation: "CREATE",
        object: poolObject(ns, "bad", -1),
      },
    };
    const denied = await call("/admission/validate", {
      method: "POST",
      body: JSON.stringify(review),
      headers: { authorization: `Bearer ${cluster.callbackToken}` },
    });
    expect(denied.status).toBe(200);
    const answer = (await denied.json()) as { response: { allowed: boolean; status?: { message?: string } } };
    expect(answer.response.allowed).toBe(false);
    expect(answer.response.status?.message).toContain("spec.replicas");
    expect((await call("/admission/validate", { method: "POST", body: JSON.stringify(review) })).status).toBe(
      401,
    );
    const audit = await call("/audit", {
      method: "POST",
      body: JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "EventList", items: [] }),
      headers: { authorization: `Bearer ${cluster.callbackToken}` },
    });
    expect(audit.status).toBe(200);
  });

  it("claims and releases a sandbox through the API, and the record lands in D1", async () => {
    const created = await call("/v1/sandboxes", {
      method: "POST",
      key: apiKey,
      body: JSON.stringify({ pool: `${ns}/w` }),
    });
    expect(created.status).toBe(201);
    const sbx = (await created.json()) as { sandboxId: string; phase: string; pod: string };
    expect(sbx.phase).toBe("starting");
    // The fast path, without a tick: the apiserver's audit event for the pod write makes the
    // Worker run the pod's steps after its answer (waitUntil), which completes the start once
    // kwok has swapped the image.
    const event = {
      auditID: "a-1",
      verb: "patch",
      objectRef: { resource: "pods", namespace: ns, name: sbx.pod },
      responseStatus: { code: 200 },
      responseObject: { kind: "Pod", metadata: { labels: { "agentbox.navix.sh/sandbox-pool": "w" } } },
    };
    // As the apiserver does: one audit event per write to the pod (each version the watch shows,
    // the claim's included), each sent once; nothing is re-sent until it works.
    const sent = new Map<string, Promise<number>>();
    await watchPodUntil(
      kc,
      ns,
      sbx.pod,
      "running from audit events alone",
      (pod) => {
        const version = pod.metadata?.resourceVersion ?? "";
        if (!sent.has(version)) {
          const audited = { ...event, auditID: `a-${version}` };
          sent.set(
            version,
            call("/audit", {
              method: "POST",
              body: JSON.stringify({ apiVersion: "audit.k8s.io/v1", kind: "EventList", items: [audited] }),
              headers: { authorization: `Bearer ${cluster.callbackToken}` },
            }).then(
              (r) => r.status,
              () => 0,
            ),
          );
        }
        // Running, with envd initialised (the claim's post-start hook, run by the Worker too).
        return (
          phaseOf(pod) === "running" && !pod.metadata?.annotations?.["agentbox.navix.sh/post-start-hooks"]
        );
      },
      30_000,
    );
    expect(await Promise.all(sent.values())).toEqual([...sent.keys()].map(() => 200));
    const view = (await (await call(`/v1/sandboxes/${sbx.sandboxId}`, { key: apiKey })).json()) as {
      phase?: string;
    };
    expect(view.phase).toBe("running");
    expect((await call(`/v1/sandboxes/${sbx.sandboxId}`, { method: "DELETE", key: apiKey })).status).toBe(
      204,
    );
    await tickUntil("the pod idle again", async () => (await pods()).every((p) => phaseOf(p) === "idle"));
    const history = (await (await call(`/v1/history?namespace=${ns}`, { key: apiKey })).json()) as {
      records: { sandboxId: string; stopReason: string }[];
    };
    expect(history.records).toMatchObject([{ sandboxId: sbx.sandboxId, stopReason: "Released" }]);
    const d1 = await mf.getD1Database("HISTORY");
    const row = await d1
      .prepare("SELECT stop_reason, team FROM sandbox_history WHERE sandbox_id = ?")
      .bind(sbx.sandboxId)
      .first();
    expect(row).toEqual({ stop_reason: "Released", team: "edge" });
  });

  it("bad configuration gives a clear error and a failed tick, never a silent success", async () => {
    const missing = await startWorker(script, cluster, { KUBE_TOKEN: undefined, TICK_NAMESPACE: ns });
    const unreachable = await startWorker(script, cluster, {
      KUBE_API_URL: `https://${DOWN_HOST}`,
      TICK_NAMESPACE: ns,
    });
    try {
      // An API key is no admin: the caller learns the Worker is misconfigured, not how.
      const res = await missing.dispatchFetch("https://worker.test/v1/sandboxes", {
        headers: { "x-api-key": apiKey },
      });
      expect(res.status).toBe(500);
      const body = (await res.json()) as { error: { code: string; fields?: string[] } };
      expect(body.error.code).toBe("Misconfigured");
      expect(body.error.fields).toBeUndefined();
      const admin = await missing.dispatchFetch("https://worker.test/v1/sandboxes", {
        headers: { authorization: `Bearer ${cluster.functionsToken}` },
      });
      const details = (await admin.json()) as { error: { code: string; fields: string[] } };
      expect(details.error.fields.join("\n")).toContain("KUBE_TOKEN");
      expect(JSON.stringify(details)).not.toContain(cluster.callbackToken);
      expect((await cron(missing)).outcome).not.toBe("ok");

      const down = await unreachable.dispatchFetch("https://worker.test/v1/sandboxes", {
        headers: { "x-api-key": apiKey },
      });
      expect(down.status).toBe(503);
      expect(((await down.json()) as { error: { message: string } }).error.message).toContain(
        `the API server at ${DOWN_HOST} answered 500 without a Kubernetes status`,
      );
      expect((await cron(unreachable)).outcome).not.toBe("ok");
    } finally {
      await missing.dispose();
      await unreachable.dispose();
    }
  });
});
