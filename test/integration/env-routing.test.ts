import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { memberReplicas } from "../../lib/membership/env-members.ts";
import { PENDING_REQUESTS_PREFIX, SERVED_MARK_ANNOTATION } from "../../lib/pool/pending-requests.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { ENVS, envObject, TEMPLATES, templateObject, tickUntil } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, testDeps } from "./support/steps.ts";

// Creates routed across an Env's members through the test host's API. The Envs live in audit-*
// namespaces: the host's audit-driven Env and pool steps (no tick) materialise members, publish
// and act on demand, so a wake from zero happens on audit events alone.

const { core, custom, cluster } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
const key: Record<string, string> = {};
const base = `https://127.0.0.1:${cluster.hostPort}/v1`;
const open = `route-open-${randomBytes(3).toString("hex")}`;
const secret = `route-secret-${randomBytes(3).toString("hex")}`;
let ns: string;
let cleanup: () => Promise<void> = async () => {};

function api(method: string, path: string, who: string, body?: unknown) {
  return httpsRequest(`${base}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    method,
    headers: { "content-type": "application/json", "x-api-key": key[who] ?? who },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}
const json = (res: { body: unknown }) => JSON.parse(String(res.body)) as Record<string, unknown>;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "audit"));
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  key.alice = await createApiKey(
    { kube: deps.kube, apiKeys: keys, now: () => new Date() },
    { team: "research", user: "alice" },
  );
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(open, "v1", "registry.local/sandbox/python:3.12"),
  });
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(secret, "v1", "registry.local/sandbox/python:3.12", {
      visibility: { rules: [{ team: "elsewhere" }] },
    }),
  });
});
afterAll(async () => {
  await cleanup();
  for (const name of [open, secret])
    await custom.deleteClusterCustomObject({ ...TEMPLATES, name }).catch(() => {});
  deps.history.close();
});

const group = (o: Record<string, unknown> = {}) => ({ name: "default", enabled: true, minReplicas: 0, ...o });
const createEnv = (name: string, template: string, members: unknown[], groups: unknown[]) =>
  custom.createNamespacedCustomObject({
    ...ENVS,
    namespace: ns,
    body: envObject(ns, name, template, members as Record<string, unknown>[], { autoscaling: { groups } }),
  });
const getPool = async (name: string) =>
  (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name })) as SandboxPool;
const podsOf = async (pool: string) =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}` }))
    .items;
const idleIn = async (pool: string) =>
  live(await podsOf(pool)).filter((p) => phaseOf(p) === "idle" && isReady(p));
const untilIdle = (pool: string, n: number) =>
  until(`${n} idle pod(s) in ${pool}`, 60_000, async () => (await idleIn(pool)).length === n);
/** untilCounted waits until the pool's status says what its pods are (the router reads it). */
const untilCounted = (pool: string, idle: number) =>
  until(`${pool}'s status counting ${idle} idle`, 30_000, async () => {
    const s = (await getPool(pool)).status;
    return s?.idleReplicas === idle && (s.unavailableIdleReplicas ?? 0) === 0;
  });
const create = async (target: Record<string, unknown>) => {
  const res = await api("POST", "/sandboxes", "alice", target);
  return { status: res.status, body: json(res) };
};

describe("routing creates across an Env's members", () => {
  it("serves from members with idle pods first, by priority; a saturated member only as the fallback", async () => {
    const m = (name: string, priority: number, replicas: number) => ({
      name,
      spec: { replicas },
      config: { scalingGroup: "default", priority },
    });
    await createEnv("route", open, [m("route-b", 1, 1), m("route-a", 0, 1)], [group({ minReplicas: 2 })]);
    await untilIdle("route-a", 1);
    await untilIdle("route-b", 1);
    await untilCounted("route-a", 1);
    await untilCounted("route-b", 1);
    const first = await create({ env: `${ns}/route` });
    expect(first.status).toBe(201);
    expect(first.body.pool).toBe("route-a"); // lower priority wins
    await untilCounted("route-a", 0);
    const second = await create({ env: `${ns}/route` });
    expect(second.body.pool).toBe("route-b"); // the only member with an idle pod
    for (const s of [first, second]) await api("DELETE", `/sandboxes/${s.body.sandboxId}`, "alice");
    await untilCounted("route-a", 1);
    await untilCounted("route-b", 1);
    // route-a's last scale-up probe was refused (as the autoscaler records it): it is held back
    // for saturationCooldownSeconds although it has an idle pod and the better priority.
    await deps.kube.patchPoolStatus(ns, "route-a", {
      autoscaling: {
        lastScaleUpAttemptTime: rfc3339(new Date()),
        lastScaleUpAttemptResult: "Insufficient",
        scaleUpErrorMessage: "pod create refused for quota",
      },
    });
    const third = await create({ env: `${ns}/route` });
    expect(third.body.pool).toBe("route-b");
    await untilCounted("route-b", 0);
    const fourth = await create({ env: `${ns}/route` });
    expect(fourth.status).toBe(201);
    expect(fourth.body.pool).toBe("route-a"); // no fresh member can serve: the saturated one does
    for (const s of [third, fourth]) await api("DELETE", `/sandboxes/${s.body.sandboxId}`, "alice");
    await untilCounted("route-b", 1);
  });

  it("routes a template create to the Env built on it, and lists the Envs a tenant may use", async () => {
    const templateCreate = await create({ template: open });
    expect(templateCreate.status).toBe(201);
    expect(["route-a", "route-b"]).toContain(templateCreate.body.pool);
    await createEnv("hidden", secret, [{ name: "hidden-a", spec: { replicas: 0 } }], []);
    const refused = await create({ env: `${ns}/hidden` });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toMatchObject({
      code: "NotFound",
      message: `no env "${ns}/hidden" for you`,
      choices: expect.arrayContaining([`${ns}/route`]),
    });
    expect((refused.body.error as { choices: string[] }).choices).not.toContain(`${ns}/hidden`);
  });
});

describe("scale to zero and wake", () => {
  it("a create that waits wakes an Env at zero on audit events alone; idle members shrink back to zero", async () => {
    await createEnv(
      "wake",
      open,
      [{ name: "wake-a", config: { scalingGroup: "default" } }],
      [
        group({
          scaleUpPolicy: { idleThresholdSeconds: 0 },
          scaleDownPolicy: { idleTimeoutSeconds: 2, stabilizationSeconds: 0, protectionWindowSeconds: 0 },
        }),
      ],
    );
    await until(
      "the empty member pool",
      30_000,
      async () => (await getPool("wake-a").catch(() => undefined))?.status,
    );
    expect(live(await podsOf("wake-a"))).toHaveLength(0);
    const started = Date.now();
    const woken = await create({ env: `${ns}/wake`, waitTimeout: 30, wait: true });
    const wakeMs = Date.now() - started;
    expect(woken.status).toBe(201);
    expect(woken.body).toMatchObject({ pool: "wake-a", phase: "running" });
    expect(wakeMs).toBeLessThan(30_000);
    // The create waited: its pod names the host's pending mark that counted it, so the
    // autoscaler stops counting it the moment it is served.
    const [served] = (
      await core.listNamespacedPod({
        namespace: ns,
        labelSelector: `agentbox.navix.sh/sandbox-id=${String(woken.body.sandboxId)}`,
      })
    ).items;
    expect(served?.metadata?.annotations?.[SERVED_MARK_ANNOTATION]).toMatch(
      new RegExp(`^wake-a ${PENDING_REQUESTS_PREFIX}\\S+ 1 \\d{4}-`),
    );
    const env = (await custom.getNamespacedCustomObject({
      ...ENVS,
      namespace: ns,
      name: "wake",
    })) as SandboxEnv;
    const member = env.spec.clusters?.[0]?.members?.[0];
    expect(member && memberReplicas(member)).toBe(1);
    expect(
      (await getPool("wake-a")).metadata?.annotations?.["agentbox.navix.sh/last-sandbox-create-time"],
    ).toBeDefined();
    await api("DELETE", `/sandboxes/${woken.body.sandboxId}`, "alice");
    await untilIdle("wake-a", 1);
    // Idle past idleTimeoutSeconds, nobody waiting: the Env run (the tick's, played here) shrinks
    // the member to zero and the pool step deletes the pod.
    await tickUntil(
      deps,
      ns,
      "wake-a back at zero",
      async () => live(await podsOf("wake-a")).length === 0,
      60_000,
    );
    const again = await create({ env: `${ns}/wake`, waitTimeout: 30, wait: true });
    expect(again.status).toBe(201);
  });
});
