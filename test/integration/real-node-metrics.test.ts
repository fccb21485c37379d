import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { CLAIMED_AT_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { hostV1, httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { realNode, realPoolSpec } from "./support/real-node.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Sandbox metrics from the real node's kubelet (its summary API through the apiserver's node
// proxy), sampled every second by the test host (global-setup.ts usageSampleSeconds), read
// through the E2B API by the official SDK and through the native API: a sandbox that burns CPU
// or holds memory shows it, a pod released and claimed again shows only the new sandbox's runs,
// and another tenant sees none of it.

const { cluster } = kube();
const MIB = 1024 ** 2;
// One CPU and 256 MiB each: cpuCount 1, memTotal 256 MiB.
const resources = { requests: { cpu: "50m", memory: "64Mi" }, limits: { cpu: "1", memory: "256Mi" } };
const t = tenantPool("rn-metrics", "research", 3, realPoolSpec(3, { resources }));
const router = `http://127.0.0.1:${cluster.dataPlanePort}`;
const e2b = `https://127.0.0.1:${cluster.hostPort}/e2b`;

interface Metric {
  timestamp: string;
  timestampUnix: number;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
}

/** get calls the E2B API with `key`. */
const get = (path: string, key: string) =>
  httpsRequest(`${e2b}${path}`, cluster.caCert, { timeoutMs: 30_000, headers: { "X-API-KEY": key } });

/** metricsOf is the sandbox's series through E2B's API (expecting a 200). */
async function metricsOf(id: string, query = ""): Promise<Metric[]> {
  const res = await get(`/sandboxes/${id}/metrics${query}`, t.key);
  expect(res.status, res.body).toBe(200);
  return JSON.parse(res.body) as Metric[];
}

/** create creates a sandbox through the E2B API and finds its pod. */
async function create(): Promise<{ id: string; pod: V1Pod }> {
  const res = await httpsRequest(`${e2b}/sandboxes`, cluster.caCert, {
    timeoutMs: 120_000,
    method: "POST",
    headers: { "content-type": "application/json", "X-API-KEY": t.key },
    body: JSON.stringify({ templateID: `${t.ns}/p`, timeout: 600 }),
  });
  expect(res.status, res.body).toBe(201);
  const { sandboxID } = JSON.parse(res.body) as { sandboxID: string };
  const pod = (await t.pods()).find((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] === sandboxID);
  if (!pod) throw new Error(`no pod of ${t.ns} carries sandbox ${sandboxID}`);
  return { id: sandboxID, pod };
}

/** sdk runs e2b-sdk-metrics.ts on a sandbox and parses what it printed. */
async function sdk(
  id: string,
  what: string,
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  const stdout = await runSdkScript(
    "e2b-sdk-metrics.ts",
    { E2B_API_KEY: t.key, E2B_SANDBOX_URL: router, E2B_TEST_SANDBOX: id, E2B_TEST_DO: what, ...env },
    90_000,
  );
  const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
  expect(out.error).toBeUndefined();
  return out;
}

const latest = async (id: string) => (await metricsOf(id)).at(-1);

let idle: { id: string; pod: V1Pod };
let burner: { id: string; pod: V1Pod };
let holder: { id: string; pod: V1Pod };

beforeAll(async () => {
  const pods = await until(`3 idle pods of ${t.ns}`, 240_000, async () => {
    const ps = await t.pods();
    return ps.length === 3 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) && ps;
  });
  for (const pod of pods) expect(pod.spec?.nodeName).toBe(realNode().name);
  [idle, burner, holder] = [await create(), await create(), await create()];
}, 420_000);

describe("sandbox metrics from the real node's kubelet", () => {
  it("shows a sandbox that burns CPU well above an idle one, and one that holds memory", async () => {
    await sdk(burner.id, "burn", { E2B_TEST_SECONDS: "90" });
    await sdk(holder.id, "hold", { E2B_TEST_MIB: "96" });
    // A busy loop takes a whole CPU on an idle machine; on a loaded one (CI runners, 2 shared
    // cores) it gets its share, still far above a sandbox that runs nothing.
    const burning = await until("the burner's CPU in its series", 90_000, async () => {
      const m = await latest(burner.id);
      return m && m.cpuUsedPct >= 10 && m;
    });
    const resting = await until("the idle sandbox's series", 30_000, () => latest(idle.id));
    expect(resting.cpuUsedPct).toBeLessThan(burning.cpuUsedPct / 2);
    for (const m of [burning, resting]) {
      expect(m).toMatchObject({ cpuCount: 1, memTotal: 256 * MIB });
      expect(m.diskTotal).toBeGreaterThan(0);
      expect(m.memUsed).toBeGreaterThan(0);
    }
    const holding = await until("the holder's memory in its series", 60_000, async () => {
      const m = await latest(holder.id);
      return m && m.memUsed > resting.memUsed + 80 * MIB && m;
    });
    expect(holding.memUsed).toBeLessThanOrEqual(256 * MIB);
  }, 240_000);

  it("answers Sandbox.getMetrics() of the official SDK with the sandbox's series", async () => {
    // A loaded machine's node reads can miss the 1 s sampling timeout and back off (UsageSampler's
    // rest), so the series may grow slowly: wait until it holds three points.
    await until(
      "3 samples in the burner's series",
      60_000,
      async () => (await metricsOf(burner.id)).length > 2,
    );
    const out = await sdk(burner.id, "metrics");
    const metrics = out.metrics as (Metric & { timestamp: string })[];
    expect(metrics.length).toBeGreaterThan(2);
    expect(out.staticCount).toBeGreaterThanOrEqual(metrics.length);
    const claimed = Date.parse(burner.pod.metadata?.annotations?.[CLAIMED_AT_ANNOTATION] ?? "");
    for (const m of metrics) {
      expect(Date.parse(m.timestamp)).toBeGreaterThanOrEqual(Math.floor(claimed / 1000) * 1000);
      expect(m.cpuCount).toBe(1);
    }
    // Oldest first, and the burn is in it.
    const times = metrics.map((m) => Date.parse(m.timestamp));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Math.max(...metrics.map((m) => m.cpuUsedPct))).toBeGreaterThanOrEqual(10);
  }, 120_000);

  it("bounds the series by start and end, and answers a bad one with a 400 naming it", async () => {
    const all = await metricsOf(burner.id);
    const middle = all[Math.floor(all.length / 2)];
    if (!middle) throw new Error("no series");
    const later = await metricsOf(burner.id, `?start=${middle.timestampUnix}`);
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((m) => m.timestampUnix >= middle.timestampUnix)).toBe(true);
    const earlier = await metricsOf(burner.id, `?end=${middle.timestampUnix}`);
    expect(earlier.every((m) => m.timestampUnix <= middle.timestampUnix)).toBe(true);
    const bad = await get(`/sandboxes/${burner.id}/metrics?start=yesterday`, t.key);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ code: 400, message: expect.stringMatching(/^start: /) });
    const backwards = await get(`/sandboxes/${burner.id}/metrics?start=20&end=10`, t.key);
    expect(backwards.status).toBe(400);
  }, 60_000);

  it("lists the latest sample of the caller's sandboxes only, and bounds how many are asked", async () => {
    const other = await t.keyOf(`other-${randomBytes(2).toString("hex")}`);
    const ids = `${burner.id},${idle.id},not-a-sandbox`;
    const mine = await get(`/sandboxes/metrics?sandbox_ids=${ids}`, t.key);
    expect(mine.status, mine.body).toBe(200);
    const { sandboxes } = JSON.parse(mine.body) as { sandboxes: Record<string, Metric> };
    expect(Object.keys(sandboxes).sort()).toEqual([burner.id, idle.id].sort());
    expect(sandboxes[idle.id]).toMatchObject({ cpuCount: 1, memTotal: 256 * MIB });
    const theirs = await get(`/sandboxes/metrics?sandbox_ids=${ids}`, other);
    expect(JSON.parse(theirs.body)).toEqual({ sandboxes: {} });
    const many = Array.from({ length: 101 }, (_, i) => `s${i}`).join(",");
    expect((await get(`/sandboxes/metrics?sandbox_ids=${many}`, t.key)).status).toBe(400);
  }, 60_000);

  it("answers the native endpoint to the owner, and a 404 to another tenant on both APIs", async () => {
    const native = hostV1(cluster, () => t.key);
    const res = await native("GET", `/sandboxes/${idle.id}/metrics`);
    expect(res.status, res.body).toBe(200);
    const body = JSON.parse(res.body) as { sandboxId: string; metrics: Record<string, unknown>[] };
    expect(body.sandboxId).toBe(idle.id);
    expect(body.metrics.length).toBeGreaterThan(0);
    expect(body.metrics[0]).toMatchObject({ cpuCount: 1, memoryTotalBytes: 256 * MIB });
    const bad = await native("GET", `/sandboxes/${idle.id}/metrics?from=soon`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).error.fields).toEqual([{ path: "from", message: expect.any(String) }]);

    const other = await t.keyOf(`other-${randomBytes(2).toString("hex")}`);
    const theirs = hostV1(cluster, () => other);
    expect((await theirs("GET", `/sandboxes/${idle.id}/metrics`)).status).toBe(404);
    expect((await get(`/sandboxes/${idle.id}/metrics`, other)).status).toBe(404);
  }, 60_000);

  it("shows a released-and-reclaimed pod's new sandbox only its own runs", async () => {
    const before = await metricsOf(holder.id);
    const peak = Math.max(...before.map((m) => m.memUsed));
    const del = await httpsRequest(`${e2b}/sandboxes/${holder.id}`, cluster.caCert, {
      timeoutMs: 30_000,
      method: "DELETE",
      headers: { "X-API-KEY": t.key },
    });
    expect(del.status).toBe(204);
    await until("the released pod idle again", 180_000, async () => {
      const pod = (await t.pods()).find((p) => p.metadata?.name === holder.pod.metadata?.name);
      return pod && phaseOf(pod) === "idle" && isReady(pod);
    });
    // The only idle pod of the pool: the new sandbox runs in the pod the holder ran in.
    const next = await create();
    expect(next.pod.metadata?.name).toBe(holder.pod.metadata?.name);
    const claimed = Date.parse(next.pod.metadata?.annotations?.[CLAIMED_AT_ANNOTATION] ?? "");
    const series = await until("the new sandbox's series", 60_000, async () => {
      const s = await metricsOf(next.id);
      return s.length >= 3 && s;
    });
    for (const m of series) {
      expect(Date.parse(m.timestamp)).toBeGreaterThanOrEqual(Math.floor(claimed / 1000) * 1000);
      expect(m.memUsed).toBeLessThan(peak - 60 * MIB);
    }
    // The holder's series is still its own (its owner reads it after the end, from the history).
    expect((await metricsOf(holder.id)).length).toBeGreaterThanOrEqual(before.length);
  }, 420_000);
});
