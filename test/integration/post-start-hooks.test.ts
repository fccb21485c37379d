import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { envdAccessToken, importSealKeys } from "../../lib/claims/sealing.ts";
import { hostV1 } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import {
  isReady,
  POOLS,
  phaseOf,
  poolObject,
  reconcileUntil,
  testDeps,
  withPostStart,
} from "./support/steps.ts";

// Post-start hooks (envd /init with the claim's env) and lifetimes, through the /v1 API of the
// test host, against the fake envd every kwok pod has on its loopback IP. The failing-hook and
// lifetime cases drive the steps themselves, with their own clock.

const { core, custom, cluster } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
let apiKey: string;
const cleanups: (() => Promise<void>)[] = [];

const api = hostV1(cluster, () => apiKey);

/** pool creates a pool of `replicas` and waits until its pods are idle (reconciling itself unless audited). */
async function pool(prefix: string, replicas: number) {
  const created = await newNamespace(core, prefix);
  cleanups.push(created.cleanup);
  const ns = created.ns;
  await custom.createNamespacedCustomObject({ ...POOLS, namespace: ns, body: poolObject(ns, "p", replicas) });
  const list = async () =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: "agentbox.navix.sh/sandbox-pool=p" }))
      .items;
  const idle = async () => {
    const ps = await list();
    return ps.length === replicas && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  };
  if (prefix.startsWith("audit")) await until("idle pods", 90_000, idle);
  else await reconcileUntil(deps, ns, "p", "idle pods", idle);
  return { ns, list };
}

beforeAll(async () => {
  await withPostStart(deps);
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  apiKey = await createApiKey(
    { kube: deps.kube, apiKeys: keys, now: () => new Date() },
    { team: "hooks", user: `u-${randomBytes(3).toString("hex")}` },
  );
});
afterAll(async () => {
  for (const c of cleanups) await c();
  deps.history.close();
});

describe("post-start hooks and lifetimes", () => {
  it("hands the claim's env vars and token to the pod's envd before the sandbox counts as running", async () => {
    const { list } = await pool("audit-hooks", 1);
    const { ns } = { ns: (await list())[0]?.metadata?.namespace ?? "" };
    const created = await api("POST", "/sandboxes", {
      pool: `${ns}/p`,
      envVars: { API_TOKEN: "per-claim-secret", MODE: "eval" },
      wait: true,
      startupTimeout: 30,
    });
    expect(created.status).toBe(201);
    const sbx = JSON.parse(created.body) as { sandboxId: string; phase: string; podIP: string };
    expect(sbx.phase).toBe("running");
    const pod = (await list())[0];
    expect(pod?.metadata?.annotations?.["agentbox.navix.sh/post-start-hooks"]).toBeUndefined();
    const token = await envdAccessToken(await importSealKeys(cluster.sealingKey), sbx.sandboxId);
    const envs = await fetch(`http://${sbx.podIP}:${cluster.envdPort}/envs`, {
      headers: { "x-access-token": token },
    });
    expect(await envs.json()).toEqual({ API_TOKEN: "per-claim-secret", MODE: "eval" });
    // The env travels sealed: the pod never showed it in clear text.
    expect(JSON.stringify(pod)).not.toContain("per-claim-secret");
  });

  it("releases a sandbox whose hooks keep failing past the deadline, with the error in its record", async () => {
    const { ns, list } = await pool("hooks-fail", 1);
    const created = await api("POST", "/sandboxes", {
      pool: `${ns}/p`,
      envVars: { AGENTBOX_TEST_FAIL_INIT: "1" },
    });
    expect(created.status).toBe(201);
    const { sandboxId } = JSON.parse(created.body) as { sandboxId: string };
    const sealed = (await list())[0]?.metadata?.annotations?.["agentbox.navix.sh/post-start-hooks"] ?? "";
    expect(sealed).toContain('"type":"EnvdInit"');
    expect(sealed).not.toContain("AGENTBOX_TEST_FAIL_INIT");
    // Running, hooks failing: it shows as starting until the deadline, then is released.
    await reconcileUntil(
      deps,
      ns,
      "p",
      "running with hooks pending",
      async () => phaseOf((await list())[0] ?? {}) === "running",
    );
    const view = JSON.parse((await api("GET", `/sandboxes/${sandboxId}`)).body) as {
      phase: string;
      detail?: { reason: string };
    };
    expect(view).toMatchObject({ phase: "starting", detail: { reason: "PostStartHooks" } });
    deps.clock.offsetMs = (cluster.postStartDeadlineSeconds + 1) * 1000;
    const record = await reconcileUntil(deps, ns, "p", "the failed sandbox's record", () =>
      deps.history.get(sandboxId),
    );
    deps.clock.offsetMs = 0;
    expect(record).toMatchObject({ stopReason: "Failed", failureReason: "PostStartHookFailed" });
    expect(record.failureMessage).toMatch(/\/init answered 500/);
    await reconcileUntil(
      deps,
      ns,
      "p",
      "the pod idle again",
      async () => phaseOf((await list())[0] ?? {}) === "idle",
    );
  });

  it("releases a sandbox when its lifetime ends, however active; timeout calls move the end", async () => {
    const { ns, list } = await pool("lifetime", 2);
    const short = JSON.parse((await api("POST", "/sandboxes", { pool: `${ns}/p`, timeout: 60 })).body) as {
      sandboxId: string;
      endAt: string;
    };
    const long = JSON.parse((await api("POST", "/sandboxes", { pool: `${ns}/p`, timeout: 60 })).body) as {
      sandboxId: string;
    };
    expect(Date.parse(short.endAt) - Date.now()).toBeGreaterThan(55_000);
    await reconcileUntil(deps, ns, "p", "both running", async () =>
      (await list()).every((p) => phaseOf(p) === "running"),
    );
    const moved = await api("POST", `/sandboxes/${long.sandboxId}/timeout`, { timeout: 3600 });
    expect(moved.status).toBe(200);
    // Recent activity does not keep a sandbox past its lifetime.
    await api("POST", "/activity", {
      sandboxes: [{ id: short.sandboxId, lastActive: new Date(Date.now() + 90_000).toISOString() }],
    });
    deps.clock.offsetMs = 120_000;
    const record = await reconcileUntil(deps, ns, "p", "the expired sandbox's record", () =>
      deps.history.get(short.sandboxId),
    );
    expect(record).toMatchObject({ stopReason: "Released", failureReason: "LifetimeExpired" });
    await reconcileUntil(deps, ns, "p", "one idle, one still running", async () => {
      const phases = (await list()).map(phaseOf).sort();
      return phases.join() === "idle,running";
    });
    deps.clock.offsetMs = 0;
    expect(await deps.history.get(long.sandboxId)).toBeUndefined();
  });
});
