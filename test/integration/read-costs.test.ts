import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { IDLE_TIMEOUT_ANNOTATION, LAST_ACTIVE_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { until } from "./support/kube.ts";
import { phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// What one activity report and one sandbox's GET, timeout and DELETE cost the apiserver (issue
// #23), counted on the route running in this process over a transport that records every request:
// the pods are found from the watch cache (a list with a resourceVersion), and etcd is read only
// when the cache has no such sandbox or a write lost to a newer version. Times are logged, not
// asserted.

const t = poolTest("read-costs");
const { deps, sent, app, hooks } = inProcessApi(t.deps);
const POOL = 40;
const SANDBOXES = 30;
let key = "";
let other = "";
const ids: string[] = [];

const podLists = () =>
  sent.filter((r) => r.method === "GET" && r.path.endsWith("/pods") && r.query?.watch === undefined);
const isCached = (r: KubeRequest) => r.query?.resourceVersion !== undefined;
const patches = () => sent.filter((r) => r.method === "PATCH" && r.path.includes("/pods/"));
const cost = () => {
  const lists = podLists();
  return {
    cached: lists.filter(isCached).length,
    consistent: lists.filter((r) => !isCached(r)).length,
    patches: patches().length,
  };
};
/** measure runs call with the request log cleared, and logs what it cost. */
async function measure<T>(what: string, call: () => Promise<T>): Promise<T> {
  sent.length = 0;
  const t0 = performance.now();
  const out = await call();
  const c = cost();
  console.info(
    `[read-costs] ${what}: pod LISTs ${c.cached} cached + ${c.consistent} consistent, ${c.patches} patches, ${Math.round(performance.now() - t0)} ms`,
  );
  return out;
}
const request = async (method: string, path: string, body?: unknown, who = key) =>
  app.request(`/v1${path}`, {
    method,
    headers: { "x-api-key": who, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const podOf = async (id: string) => {
  const [pod] = (await t.pods("p")).filter((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === id);
  if (!pod) throw new Error(`no pod runs ${id}`);
  return pod;
};
/** afterFirstList makes `write` land (a real write) right after the next list of sandbox id's pod. */
function afterFirstList(id: string, write: () => Promise<unknown>) {
  hooks.after = async (req) => {
    if (req.method !== "GET" || !(req.query?.labelSelector ?? "").includes(id)) return;
    hooks.after = undefined;
    await write();
  };
}
const bump = async (id: string, annotation: string, value: string) => {
  const pod = await podOf(id);
  await t.deps.kube.patchPod(t.ns, pod.metadata?.name ?? "", [
    { op: "add", path: `/metadata/annotations/${escapePointer(annotation)}`, value },
  ]);
};

beforeAll(async () => {
  key = await tenantKey(deps, "read-costs");
  other = await tenantKey(deps, "read-costs-other");
  await t.readyPool("p", POOL);
  for (let i = 0; i < SANDBOXES; i++) {
    const created = await postCreate(app, key, { pool: `${t.ns}/p` });
    expect(created.status).toBe(201);
    ids.push(((await created.json()) as { sandboxId: string }).sandboxId);
  }
  // Counts below assume the sandboxes have settled (running, as the steps see them) and the
  // cache has caught up with them (a few milliseconds).
  await reconcileUntil(t.deps, t.ns, "p", "the sandboxes running", async () => {
    const pods = (await t.pods("p")).filter((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL]);
    return pods.length === SANDBOXES && pods.every((p) => phaseOf(p) === "running");
  });
  const versions = (pods: V1Pod[]) =>
    pods
      .map((p) => `${p.metadata?.name}@${p.metadata?.resourceVersion}`)
      .sort()
      .join();
  await until("the watch cache shows the sandboxes as etcd holds them", 30_000, async () => {
    const [cached, fresh] = await Promise.all([
      deps.kube.listPods(t.ns, SANDBOX_ID_LABEL, { cached: true }),
      deps.kube.listPods(t.ns, SANDBOX_ID_LABEL),
    ]);
    return versions(cached.items) === versions(fresh.items);
  });
}, 240_000);

describe("POST /v1/activity", () => {
  it("finds 1,000 ids with a few cached lists, and writes each sandbox that needs it", async () => {
    const lastActive = new Date(Date.now() + 60_000).toISOString();
    const reported = [...ids, ...Array.from({ length: 1000 - ids.length }, newSandboxId)];
    const body = { sandboxes: reported.map((id) => ({ id, lastActive })) };
    const res = await measure("activity, 1,000 ids", () => request("POST", "/activity", body));
    expect(res.status).toBe(200);
    const outcome = (await res.json()) as { recorded: number; unchanged: number; unknown: string[] };
    expect(outcome.recorded).toBe(SANDBOXES);
    expect(new Set(outcome.unknown)).toEqual(new Set(reported.slice(SANDBOXES)));
    const c = cost();
    expect(c.consistent).toBe(0);
    expect(c.cached).toBeGreaterThan(0);
    expect(c.cached).toBeLessThanOrEqual(4);
    expect(c.patches).toBe(SANDBOXES);

    // Another tenant's report of the same ids finds none of them and writes nothing.
    const foreign = await measure("activity of another tenant", () =>
      request("POST", "/activity", body, other),
    );
    expect(((await foreign.json()) as { recorded: number }).recorded).toBe(0);
    expect(cost()).toMatchObject({ consistent: 0, patches: 0 });
  });

  it("records a sandbox whose cached pod was a moment old, after one get of it from etcd", async () => {
    const id = ids[5] ?? "";
    afterFirstList(id, () => bump(id, "test.agentbox/bump", "2"));
    const lastActive = new Date(Date.now() + 120_000).toISOString();
    const body = { sandboxes: [{ id, lastActive }] };
    const res = await measure("activity, stale cache", () => request("POST", "/activity", body));
    expect(await res.json()).toEqual({ recorded: 1, unchanged: 0, unknown: [] });
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 2 });
    expect(sent.filter((r) => r.method === "GET" && r.path.includes("/pods/"))).toHaveLength(1);
    const stored = (await podOf(id)).metadata?.annotations?.[LAST_ACTIVE_ANNOTATION];
    expect(stored).toBe(rfc3339(new Date(lastActive)));
  });

  it("refuses a report of more than 1,000 sandboxes, naming the field, before reading anything", async () => {
    const lastActive = new Date().toISOString();
    const body = { sandboxes: Array.from({ length: 1001 }, () => ({ id: newSandboxId(), lastActive })) };
    const res = await measure("activity, 1,001 ids", () => request("POST", "/activity", body));
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: { fields?: { path: string; message: string }[] } }).error;
    expect(error.fields?.[0]).toEqual({ path: "sandboxes", message: "at most 1000 sandboxes per report" });
    expect(podLists()).toEqual([]);
  });
});

describe("one sandbox's GET, timeout and DELETE", () => {
  it("cost one cached list of that sandbox's pod, no consistent list", async () => {
    const id = ids[0] ?? "";
    expect((await measure("GET", () => request("GET", `/sandboxes/${id}`))).status).toBe(200);
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 0 });
    expect(podLists()[0]?.query?.labelSelector).toBe(`${SANDBOX_ID_LABEL}=${id}`);

    const timeout = await measure("timeout", () =>
      request("POST", `/sandboxes/${id}/timeout`, { timeout: 900 }),
    );
    expect(timeout.status).toBe(200);
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 1 });

    expect((await measure("DELETE", () => request("DELETE", `/sandboxes/${id}`))).status).toBe(204);
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 1 });
    expect(phaseOf(await podOf(id))).toBe("stopping");
  });

  it("asks etcd only when the cache has no such sandbox; another tenant's is a 404 without it", async () => {
    const unknown = newSandboxId();
    expect((await measure("GET unknown", () => request("GET", `/sandboxes/${unknown}`))).status).toBe(404);
    expect(cost()).toEqual({ cached: 1, consistent: 1, patches: 0 });

    const theirs = ids[1] ?? "";
    const get = () => request("GET", `/sandboxes/${theirs}`, undefined, other);
    expect((await measure("GET of another tenant's", get)).status).toBe(404);
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 0 });
    const del = () => request("DELETE", `/sandboxes/${theirs}`, undefined, other);
    expect((await measure("DELETE of another tenant's", del)).status).toBe(404);
    expect(cost()).toEqual({ cached: 1, consistent: 0, patches: 0 });
  });

  it("a DELETE or timeout whose write lost to a newer version reads again from etcd and succeeds", async () => {
    const [a = "", b = ""] = ids.slice(2, 4);
    afterFirstList(a, () => bump(a, "test.agentbox/bump", "1"));
    expect((await measure("DELETE, lost a race", () => request("DELETE", `/sandboxes/${a}`))).status).toBe(
      204,
    );
    expect(cost()).toEqual({ cached: 1, consistent: 1, patches: 2 });
    expect(phaseOf(await podOf(a))).toBe("stopping");

    afterFirstList(b, () => bump(b, "test.agentbox/bump", "1"));
    const res = await measure("timeout, lost a race", () =>
      request("POST", `/sandboxes/${b}/timeout`, { idleTimeout: 120 }),
    );
    expect(res.status).toBe(200);
    expect(cost()).toEqual({ cached: 1, consistent: 1, patches: 2 });
    expect((await podOf(b)).metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]).toBe("120");
  });

  it("a timeout that the cached pod already has is checked against etcd before nothing is written", async () => {
    // The caller set 100, then 200 (a write the cache may not show yet), then 100 again: the
    // cached pod still says 100, but the sandbox must end with 100, not the 200 etcd holds.
    const id = ids[4] ?? "";
    expect((await request("POST", `/sandboxes/${id}/timeout`, { idleTimeout: 100 })).status).toBe(200);
    await until("the cache shows idle timeout 100", 30_000, async () => {
      const [pod] = (await deps.kube.listPods(undefined, `${SANDBOX_ID_LABEL}=${id}`, { cached: true }))
        .items;
      return pod?.metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION] === "100";
    });
    afterFirstList(id, () => bump(id, IDLE_TIMEOUT_ANNOTATION, "200"));
    const res = await request("POST", `/sandboxes/${id}/timeout`, { idleTimeout: 100 });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { idleTimeoutSeconds?: number }).idleTimeoutSeconds).toBe(100);
    expect((await podOf(id)).metadata?.annotations?.[IDLE_TIMEOUT_ANNOTATION]).toBe("100");
  });
});
