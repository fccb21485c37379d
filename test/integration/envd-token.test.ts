import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { RecordedRequest } from "../../infra/dev/envd/server.ts";
import { envdAccessToken, importSealKeys } from "../../lib/claims/sealing.ts";
import { hostV1 } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { isReady, POOLS, phaseOf, poolObject, testDeps } from "./support/steps.ts";

// Issue #35, point 1: no sandbox runs without an envd access token. Every /v1 claim, env vars or
// not, initialises the pod's envd with the sandbox's token before it is answered Running; the
// envd stand-in behaves as the real envd (no token: nothing checked; a token: checked, and never
// replaced by an /init without it). The calls go straight to the pod's envd, past the router.

const { core, custom, cluster } = kube();
const deps = testDeps();
const keys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
let apiKey: string;
const cleanups: (() => Promise<void>)[] = [];

const api = hostV1(cluster, () => apiKey);

/** envd calls the pod's envd directly (podIP:envdPort), with or without the token. */
const envd = (podIP: string, path: string, init: { method?: string; token?: string; body?: string } = {}) =>
  fetch(`http://${podIP}:${cluster.envdPort}${path}`, {
    method: init.method ?? "GET",
    headers: {
      ...(init.token ? { "x-access-token": init.token } : {}),
      ...(init.body === undefined ? {} : { "content-type": "application/octet-stream" }),
    },
    ...(init.body === undefined ? {} : { body: init.body }),
    signal: AbortSignal.timeout(10_000),
  });

/** FORGED is the signed-looking tokenless /files target of the issue: root's file, a made-up signature. */
const FORGED = "/files?path=/etc/shadow&username=root&signature=x";

/** pool makes a one-pod pool the test host reconciles itself (audit-*), and waits for it idle. */
async function pool(prefix: string, templateAnnotations?: Record<string, string>) {
  const created = await newNamespace(core, prefix);
  cleanups.push(created.cleanup);
  const ns = created.ns;
  const body = poolObject(ns, "p", 1);
  if (templateAnnotations)
    (body.spec.template as { metadata?: unknown }).metadata = { annotations: templateAnnotations };
  await custom.createNamespacedCustomObject({ ...POOLS, namespace: ns, body });
  const list = async () =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: "agentbox.navix.sh/sandbox-pool=p" }))
      .items;
  const idle = async () => {
    const ps = await list();
    return ps.length === 1 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  };
  await until("the idle pod", 90_000, idle);
  return { ns, list, idle };
}

/** create makes a sandbox through /v1 without env vars and waits for Running. */
async function create(ns: string) {
  const res = await api("POST", "/sandboxes", { pool: `${ns}/p`, wait: true, startupTimeout: 30 });
  expect(res.status, res.body).toBe(201);
  const sbx = JSON.parse(res.body) as { sandboxId: string; phase: string; podIP: string };
  expect(sbx.phase).toBe("running");
  const token = await envdAccessToken(await importSealKeys(cluster.sealingKey), sbx.sandboxId);
  return { ...sbx, token };
}

beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: keys.namespace } } }).catch(() => {});
  apiKey = await createApiKey(
    { kube: deps.kube, apiKeys: keys, now: () => new Date() },
    { team: "envd-token", user: `u-${randomBytes(3).toString("hex")}` },
  );
});
afterAll(async () => {
  for (const c of cleanups) await c();
  deps.history.close();
});

describe("every claim initialises envd with the sandbox's token", () => {
  it("a /v1 create without env vars: envd holds the token once Running, and refuses the rest", async () => {
    const { ns, list } = await pool("audit-envd-token");
    const idleIP = (await list())[0]?.status?.podIP ?? "";
    // The stand-in is the real envd here: before any /init nothing is checked, forged
    // signature and root included (what the router and the NetworkPolicy must fence).
    const planted = await envd(idleIP, FORGED, { method: "POST", body: "planted" });
    expect(planted.status).toBe(200);
    expect(await (await envd(idleIP, FORGED)).text()).toBe("planted");
    expect((await envd(idleIP, "/envs")).status).toBe(200);

    const sbx = await create(ns);
    expect((await list())[0]?.metadata?.annotations?.["agentbox.navix.sh/post-start-hooks"]).toBeUndefined();
    // Without the token: refused, the forged /files read and write included.
    const bare = await envd(sbx.podIP, "/envs");
    expect(bare.status).toBe(401);
    expect((await envd(sbx.podIP, FORGED)).status).toBe(401);
    const write = await envd(sbx.podIP, FORGED, { method: "POST", body: "attacker" });
    expect(write.status).toBe(401);
    // Nobody without the token replaces it: another token, or none, is refused by /init.
    for (const accessToken of ["attacker", ""]) {
      const init = await fetch(`http://${sbx.podIP}:${cluster.envdPort}/init`, {
        method: "POST",
        body: JSON.stringify({ accessToken, envVars: { EVIL: "1" } }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(init.status).toBe(401);
    }
    // With it: envd works, with the claim's (empty) env, and the attacker's write never landed.
    const envs = await envd(sbx.podIP, "/envs", { token: sbx.token });
    expect(envs.status).toBe(200);
    expect(await envs.json()).toEqual({});
    // The claim runs in a new container: what was planted before is gone, and no write landed.
    const read = await envd(sbx.podIP, "/files?path=/etc/shadow", { token: sbx.token });
    expect(read.status).toBe(404);
  });

  it("the pod's next sandbox meets a fresh envd that takes the next claim's token only", async () => {
    const { ns, idle } = await pool("audit-envd-next");
    const first = await create(ns);
    const wrote = await envd(first.podIP, "/files?path=/home/user/mine", {
      method: "POST",
      token: first.token,
      body: "first sandbox's",
    });
    expect(wrote.status).toBe(200);
    expect((await api("DELETE", `/sandboxes/${first.sandboxId}`)).status).toBeLessThan(300);
    await until("the pod idle again", 90_000, idle);
    const second = await create(ns);
    expect(second.podIP).toBe(first.podIP);
    expect((await envd(second.podIP, "/envs", { token: first.token })).status).toBe(401);
    expect((await envd(second.podIP, "/envs", { token: second.token })).status).toBe(200);
    const gone = await envd(second.podIP, "/files?path=/home/user/mine", { token: second.token });
    expect(gone.status).toBe(404);
  });

  it("a pool whose template runs no envd: no /init, and env vars are refused by name", async () => {
    const { ns, list } = await pool("audit-envd-none", { "agentbox.navix.sh/envd": "none" });
    const refused = await api("POST", "/sandboxes", { pool: `${ns}/p`, envVars: { A: "1" } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/envVars: pool .* runs no envd/);
    const podIP = (await list())[0]?.status?.podIP ?? "";
    const since = new Date().toISOString();
    const sbx = await create(ns);
    expect(sbx.podIP).toBe(podIP);
    const inits = readFileSync(cluster.envdRequestLog, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as RecordedRequest)
      .filter((r) => r.local === podIP && r.target === "/init" && r.at >= since);
    expect(inits).toEqual([]);
  });
});
