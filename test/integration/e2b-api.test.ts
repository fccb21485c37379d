import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, POOLS, phaseOf, poolObject, testDeps } from "./support/steps.ts";

// E2B's API (/e2b) served by the test host. The pool lives in an audit-* namespace, so the host's
// own audit-driven reconciles start the sandboxes and run their envd /init hooks against the fake
// envd every pod has on its loopback IP.

const { core, custom, cluster } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
const template = `e2b-${randomBytes(3).toString("hex")}`;
const base = `https://127.0.0.1:${cluster.hostPort}/e2b`;
let ns: string;
let aliceKey: string;
const cleanups: (() => Promise<void>)[] = [];

function e2b(method: string, path: string, apiKey: string | undefined, body?: unknown) {
  return httpsRequest(`${base}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    method,
    headers: { "content-type": "application/json", ...(apiKey ? { "X-API-KEY": apiKey } : {}) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

const pods = async () =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: "agentbox.navix.sh/sandbox-pool=e2b" }))
    .items;

beforeAll(async () => {
  const created = await newNamespace(core, "audit-e2b");
  ns = created.ns;
  cleanups.push(created.cleanup);
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  aliceKey = await createApiKey(
    { kube: deps.kube, apiKeys: keys, now: () => new Date() },
    { team: "research", user: `e2b-${randomBytes(3).toString("hex")}` },
  );
  const templates = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxtemplates" };
  await custom.createClusterCustomObject({
    ...templates,
    body: {
      apiVersion: "agents.navix.sh/v1alpha1",
      kind: "SandboxTemplate",
      metadata: { name: template },
      spec: { template: { spec: { containers: [{ name: "sandbox", image: "registry.local/e2b-base:1" }] } } },
    },
  });
  cleanups.push(() => custom.deleteClusterCustomObject({ ...templates, name: template }).then(() => {}));
  await custom.createNamespacedCustomObject({
    ...POOLS,
    namespace: ns,
    body: poolObject(ns, "e2b", 2, { templateName: template }),
  });
  await until("2 idle pods", 90_000, async () => {
    const ps = await pods();
    return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  });
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  deps.history.close();
});

/**
 * envsOf asks each pod's (fake) envd for its env with the token; the pods that answer, among those
 * whose envd holds a token (an envd no /init reached checks nothing, as the real one: any token
 * gets its empty env, so a pod answering a made-up token is left out).
 */
async function envsOf(ps: V1Pod[], token: string): Promise<Record<string, string>[]> {
  const envs = (p: V1Pod, t: string) =>
    fetch(`http://${p.status?.podIP}:${cluster.envdPort}/envs`, {
      headers: { "x-access-token": t },
      signal: AbortSignal.timeout(10_000),
    });
  const answers = await Promise.all(
    ps.map(async (p) => {
      if ((await envs(p, `probe-${randomBytes(8).toString("hex")}`)).ok) return undefined;
      const res = await envs(p, token);
      return res.ok ? ((await res.json()) as Record<string, string>) : undefined;
    }),
  );
  return answers.filter((a): a is Record<string, string> => a !== undefined);
}

describe("E2B-compatible API", () => {
  it("serves the official e2b SDK unmodified: create, getInfo, list, setTimeout, connect, kill", async () => {
    const env = { E2B_API_URL: base, E2B_API_KEY: aliceKey, E2B_TEST_TEMPLATE: template };
    const sdkFlow = async (part: string, more: Record<string, string> = {}) => {
      const stdout = await runSdkScript("e2b-sdk-flow.ts", { ...env, E2B_TEST_PART: part, ...more }, 120_000);
      const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
      expect(out.error).toBeUndefined();
      return out;
    };
    const out = await sdkFlow("create");
    const created = out.created as { sandboxId: string; envdAccessToken: string };
    expect(created.sandboxId).toMatch(/^sbx-/);
    expect(created.envdAccessToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const info = out.info as Record<string, unknown>;
    expect(info).toMatchObject({
      sandboxId: created.sandboxId,
      templateId: template,
      metadata: { run: "sdk" },
      state: "running",
    });
    const endAt = Date.parse(String(info.endAt));
    expect(endAt - Date.parse(String(info.startedAt))).toBeGreaterThanOrEqual(119_000);
    expect(out.listed).toEqual([created.sandboxId]);
    expect(Date.parse(String(out.afterTimeout))).toBeGreaterThan(endAt);
    expect(out.connected).toBe(created.sandboxId);
    // The claim's env reached the envd of exactly one pod, for the holder of its token only
    // (asked while the sandbox runs: a kill resets its pod to a fresh envd that holds nothing).
    expect(await envsOf(await pods(), created.envdAccessToken)).toEqual([
      { GREETING: "hello", SECRET_TOKEN: "s3cr3t" },
    ]);
    expect(await envsOf(await pods(), "wrong-token")).toEqual([]);
    const ended = await sdkFlow("kill", { E2B_TEST_SANDBOX: created.sandboxId });
    expect(ended).toMatchObject({ killed: true, killedAgain: false, afterKill: "SandboxNotFoundError" });
    expect(ended.unknownTemplate).toMatch(/not found/);
    // Released with stop reason Released, and back to idle.
    await until(
      "pods idle again",
      30_000,
      async () => (await pods()).every((p) => phaseOf(p) === "idle") || undefined,
    );
  });

  it("answers in E2B's error shape: 401, 400 naming the field, 404 (pause, resume, connect too)", async () => {
    const anonymous = await e2b("GET", "/v2/sandboxes", undefined);
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.body)).toMatchObject({ code: 401 });
    const bad = await e2b("POST", "/v2/sandboxes", aliceKey, { templateID: template, timeout: -5 });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ code: 400, message: expect.stringContaining("timeout") });
    // Memory snapshots are refused by name; a pause at the timeout (files only) is not.
    const memory = await e2b("POST", "/v2/sandboxes", aliceKey, {
      templateID: template,
      autoPause: true,
      autoPauseMemory: true,
    });
    expect(memory.status).toBe(400);
    expect(JSON.parse(memory.body).message).toMatch(/^autoPauseMemory: memory snapshots are not kept/);
    const notJson = await e2b("POST", "/v2/sandboxes", aliceKey, "{");
    expect(notJson.status).toBe(400);
    expect((await e2b("GET", "/sandboxes/sbx-nothing", aliceKey)).status).toBe(404);
    expect(JSON.parse((await e2b("DELETE", "/sandboxes/sbx-nothing", aliceKey)).body)).toEqual({
      code: 404,
      message: 'sandbox "sbx-nothing" not found',
    });
    for (const path of ["/sandboxes/sbx-nothing/pause", "/sandboxes/sbx-nothing/resume"]) {
      const res = await e2b("POST", path, aliceKey, {});
      expect(JSON.parse(res.body), path).toEqual({ code: 404, message: 'sandbox "sbx-nothing" not found' });
      expect(res.status, path).toBe(404);
    }
    const connect = await e2b("POST", "/v2/sandboxes/sbx-nothing/connect", aliceKey, {});
    expect(connect.status).toBe(404);
    const keepMemory = await e2b("POST", "/sandboxes/sbx-nothing/pause", aliceKey, { memory: true });
    expect(keepMemory.status).toBe(400);
    expect(JSON.parse(keepMemory.body)).toMatchObject({
      code: 400,
      message: expect.stringMatching(/^memory: memory snapshots are not kept.*files/),
    });
    expect((await e2b("POST", "/v2/sandboxes/sbx-nothing/connect", aliceKey, { memory: true })).status).toBe(
      400,
    );
    expect(JSON.parse((await e2b("GET", "/v2/sandboxes?state=paused", aliceKey)).body)).toEqual([]);
    expect((await e2b("GET", "/v2/sandboxes?nextToken=paused:x", aliceKey)).status).toBe(400);
    expect((await e2b("GET", "/v2/sandboxes?limit=0", aliceKey)).status).toBe(400);
    const nowhere = await e2b("GET", "/no/such/route", aliceKey);
    expect(nowhere.status).toBe(404);
    expect(JSON.parse(nowhere.body)).toMatchObject({ code: 404 });
  });

  it("a create that cannot start answers in E2B's shape and leaves no sandbox behind", async () => {
    const stuck = {
      ...poolObject(ns, "stuck", 1, { defaultStartupTimeout: "3s" }),
    };
    stuck.spec.template.spec.containers[0] = {
      ...stuck.spec.template.spec.containers[0],
      image: "registry.invalid/unpullable:1",
    } as (typeof stuck.spec.template.spec.containers)[0];
    await custom.createNamespacedCustomObject({ ...POOLS, namespace: ns, body: stuck });
    const stuckPods = async () =>
      (await core.listNamespacedPod({ namespace: ns, labelSelector: "agentbox.navix.sh/sandbox-pool=stuck" }))
        .items;
    await until("the stuck pool's pod idle", 90_000, async () => {
      const ps = await stuckPods();
      return ps.length === 1 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
    });
    const res = await e2b("POST", "/v2/sandboxes", aliceKey, { templateID: `${ns}/stuck` });
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body)).toMatchObject({
      code: 504,
      message: expect.stringMatching(/ImagePull|ErrImagePull/),
    });
    // Released at once: no sandbox of this tenant is left on the pod.
    const [pod] = await stuckPods();
    expect(["stopping", "idle"]).toContain(phaseOf(pod ?? {}));
    expect(JSON.parse((await e2b("GET", "/v2/sandboxes", aliceKey)).body)).toEqual([]);
  });

  it("an E2B create against an Env at zero waits for it to wake (the SDK has no wait option)", async () => {
    const woken = `e2b-wake-${randomBytes(3).toString("hex")}`;
    await custom.createClusterCustomObject({
      ...TEMPLATES,
      body: templateObject(woken, "v1", "registry.local/e2b-base:1"),
    });
    cleanups.push(() => custom.deleteClusterCustomObject({ ...TEMPLATES, name: woken }).then(() => {}));
    await custom.createNamespacedCustomObject({
      ...ENVS,
      namespace: ns,
      body: envObject(ns, "wake", woken, [{ name: "wake-a", config: { scalingGroup: "default" } }], {
        autoscaling: { groups: [{ name: "default", enabled: true, minReplicas: 0 }] },
      }),
    });
    await until("the empty member pool", 30_000, async () => {
      const pool = await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name: "wake-a" });
      return (pool as { status?: unknown }).status;
    });
    const res = await e2b("POST", "/v2/sandboxes", aliceKey, { templateID: woken });
    expect(res.status).toBe(201);
    const id = (JSON.parse(res.body) as { sandboxID: string }).sandboxID;
    expect((await e2b("DELETE", `/sandboxes/${id}`, aliceKey)).status).toBe(204);
  });

  it("answers fuzzed bodies and parameters with a 4xx in E2B's shape, never a 5xx", async () => {
    const bodies: unknown[] = [
      "",
      "null",
      "[]",
      "{",
      { templateID: 7 },
      { templateID: "" },
      { templateID: "UPPER case" },
      { templateID: "a/b/c" },
      { templateID: template, metadata: { k: 1 } },
      { templateID: template, envVars: { "": "x" } },
      { templateID: template, timeout: 1e12 },
      { templateID: "x".repeat(70_000) },
    ];
    for (let i = 0; i < 30; i++) {
      const random = randomBytes(48).toString("latin1");
      bodies.push(random, { templateID: random, metadata: { [random.slice(0, 8)]: random } });
    }
    const calls: [string, string][] = [
      ["POST", "/v2/sandboxes"],
      ["POST", "/sandboxes/sbx-fuzz/timeout"],
      ["POST", "/sandboxes/sbx-fuzz/refreshes"],
      ["POST", "/v2/sandboxes/sbx-fuzz/connect"],
    ];
    for (const [method, path] of calls) {
      for (const body of bodies) {
        const res = await e2b(method, path, aliceKey, body);
        const what = `${method} ${path} ${JSON.stringify(body).slice(0, 60)} → ${res.status} ${res.body.slice(0, 120)}`;
        expect(res.status, what).toBeGreaterThanOrEqual(400);
        expect(res.status, what).toBeLessThan(500);
        expect(JSON.parse(res.body).code, what).toBe(res.status);
      }
    }
    for (const q of ["?limit=abc", "?state=sleeping", "?startedAfter=yesterday", "?order=up"]) {
      expect((await e2b("GET", `/v2/sandboxes${q}`, aliceKey)).status).toBe(400);
    }
    expect((await e2b("GET", `/sandboxes/${encodeURIComponent("a b,c=d")}`, aliceKey)).status).toBe(404);
  });

  it("lists same-named sandboxes of two namespaces each with its own pod (keyed by namespace and name)", async () => {
    const other = await newNamespace(core, "audit-e2b");
    cleanups.push(other.cleanup);
    const twinPods = async (namespace: string) =>
      (await core.listNamespacedPod({ namespace, labelSelector: "agentbox.navix.sh/sandbox-pool=twin" }))
        .items;
    for (const namespace of [ns, other.ns]) {
      await custom.createNamespacedCustomObject({
        ...POOLS,
        namespace,
        body: poolObject(namespace, "twin", 1),
      });
      await until(`the twin pool's pod idle in ${namespace}`, 90_000, async () => {
        const ps = await twinPods(namespace);
        return ps.length === 1 && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
      });
    }
    const [a] = await twinPods(ns);
    const [b] = await twinPods(other.ns);
    // The case that matters: the two pods share a name.
    expect(a?.metadata?.name).toBe(b?.metadata?.name);
    const ids: Record<string, string> = {};
    for (const namespace of [ns, other.ns]) {
      const res = await e2b("POST", "/v2/sandboxes", aliceKey, { templateID: `${namespace}/twin` });
      expect(res.status).toBe(201);
      ids[namespace] = JSON.parse(res.body).sandboxID;
    }
    const listed = JSON.parse((await e2b("GET", "/v2/sandboxes?limit=100", aliceKey)).body) as {
      sandboxID: string;
      templateID: string;
    }[];
    for (const namespace of [ns, other.ns])
      expect(listed.find((l) => l.sandboxID === ids[namespace])?.templateID).toBe(`${namespace}/twin`);
    const v1 = JSON.parse((await e2b("GET", "/sandboxes", aliceKey)).body) as {
      sandboxID: string;
      templateID: string;
    }[];
    for (const namespace of [ns, other.ns])
      expect(v1.find((l) => l.sandboxID === ids[namespace])?.templateID).toBe(`${namespace}/twin`);
    for (const id of Object.values(ids))
      expect((await e2b("DELETE", `/sandboxes/${id}`, aliceKey)).status).toBe(204);
  });
});
