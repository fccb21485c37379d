import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { LAST_ACTIVE_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { parseExposition, sampleOf } from "../../lib/metrics/parse-exposition.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { openStream, type SandboxApp, sandboxApp } from "./support/sandbox-app.ts";
import { poolTest, reconcileUntil } from "./support/steps.ts";
import { API_KEYS } from "./support/tenant-pool.ts";

// The test host's router writes the traffic it carries into each sandbox's last-active annotation,
// the shared truth of activity between hosts: here "another host" is the test's own step deps,
// whose router saw nothing (its pulled activity is empty), running idle release against the same
// apiserver. It must not release a sandbox whose stream is open through the test host, and must
// release it once idle. The pool's namespace is one the test host does not reconcile.

const { core, cluster } = kube();
const t = poolTest("dp-activity");
const apps: SandboxApp[] = [];
beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
  await t.readyPool("routed", 2);
});
afterAll(() => {
  for (const app of apps) app.close();
});

/** otherHost is a host without this traffic: pulled mode, its own router idle. */
const otherHost = (): HostDeps => ({ ...t.deps, idleRelease: "pulled", pullActivity: async () => new Map() });

async function api(method: string, path: string, key: string, body?: unknown) {
  return httpsRequest(`https://127.0.0.1:${cluster.hostPort}/v1${path}`, cluster.caCert, {
    method,
    timeoutMs: 60_000,
    headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
}

/** runningSandbox creates a sandbox through the test host and serves the test's app on its pod IP. */
async function runningSandbox(key: string, idleTimeout?: number) {
  const res = await api("POST", "/sandboxes", key, {
    pool: `${t.ns}/routed`,
    wait: true,
    waitTimeout: 30,
    ...(idleTimeout ? { idleTimeout } : {}),
  });
  expect(res.status).toBe(201);
  const created = JSON.parse(res.body) as { sandboxId: string; podIP: string; phase: string };
  expect(created.phase).toBe("running");
  const app = await sandboxApp(created.podIP);
  apps.push(app);
  return { id: created.sandboxId, app };
}

const podOf = async (id: string): Promise<V1Pod | undefined> =>
  (await core.listNamespacedPod({ namespace: t.ns, labelSelector: `${SANDBOX_ID_LABEL}=${id}` })).items[0];
const lastActive = async (id: string) =>
  Date.parse((await podOf(id))?.metadata?.annotations?.[LAST_ACTIVE_ANNOTATION] ?? "");

describe("the router's traffic, seen by every host", () => {
  it("an open stream's last-active keeps another host from releasing; once idle it does", async () => {
    const key = await createApiKey(
      { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "dp", user: "u" },
    );
    const s = await runningSandbox(key, 5);
    const started = await lastActive(s.id);
    const held = openStream(cluster.dataPlanePort, s.id, s.app.port, "/hold?ms=9000");
    await held.opened;
    // The other host runs idle release over and over while the stream is open (nearly twice the
    // 5 s idle timeout, nothing moving on it): the router's writes keep last-active fresh.
    const runs: string[] = [];
    let open = true;
    const ended = held.done.finally(() => {
      open = false;
    });
    while (open) {
      const report = await reconcilePool(otherHost(), t.ns, "routed", "idle-release");
      runs.push(...report.steps.flatMap((st) => st.outcomes.map((o) => o.why)));
      await Promise.race([ended.catch(() => {}), new Promise((r) => setTimeout(r, 500))]);
    }
    expect(await ended).toBe("held");
    expect(runs).toEqual([]);
    expect(await lastActive(s.id)).toBeGreaterThanOrEqual(started + 5_000);
    // Idle from the stream's end: the other host releases it (its step's own outcome says so).
    const released = await until("the other host releases the idle sandbox", 30_000, async () => {
      const report = await reconcilePool(otherHost(), t.ns, "routed", "idle-release");
      return report.steps.flatMap((st) => st.outcomes).find((o) => /release idle sandbox/.test(o.why));
    });
    expect(released.result).toBe("done");
    const record = await reconcileUntil(t.deps, t.ns, "routed", "the released sandbox's record", () =>
      t.deps.history.get(s.id),
    );
    expect(record).toMatchObject({ stopReason: "Released", failureReason: "IdleTimeout" });
  }, 120_000);

  it("an unauthenticated envd /health is no activity: a sandbox probed all along is released idle", async () => {
    const key = await createApiKey(
      { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "dp", user: "w" },
    );
    const s = await runningSandbox(key, 5);
    // Anyone may ask a sandbox's envd /health through the router, as often as it likes: four times
    // a second here, from before the idle timeout starts until the other host has released it.
    let probing = true;
    let answered = 0;
    const probes = (async () => {
      while (probing) {
        const res = await fetch(`http://127.0.0.1:${cluster.dataPlanePort}/health`, {
          headers: { "e2b-sandbox-id": s.id, "e2b-sandbox-port": "49983" },
          signal: AbortSignal.timeout(5_000),
        });
        if (res.status === 204) answered++;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      const released = await until("the other host releases the probed sandbox", 30_000, async () => {
        const report = await reconcilePool(otherHost(), t.ns, "routed", "idle-release");
        return report.steps.flatMap((st) => st.outcomes).find((o) => /release idle sandbox/.test(o.why));
      });
      expect(released.result).toBe("done");
    } finally {
      probing = false;
      await probes;
    }
    // The probes reached envd all through the idle timeout (5 s, at up to four a second).
    expect(answered).toBeGreaterThanOrEqual(5);
  }, 90_000);

  it("a release mid-stream ends the stream with an error, and the router counts what it carried", async () => {
    const key = await createApiKey(
      { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "dp", user: "v" },
    );
    const s = await runningSandbox(key);
    const held = openStream(cluster.dataPlanePort, s.id, s.app.port, "/hold?ms=60000");
    await held.opened;
    const scrape = async () =>
      parseExposition(
        (
          await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/metrics`, cluster.caCert, {
            headers: { authorization: `Bearer ${cluster.metricsToken}` },
            timeoutMs: 30_000,
          })
        ).body,
      );
    expect(
      sampleOf(await scrape(), "agentbox_dataplane_open_streams", { port_class: "other" }),
    ).toBeGreaterThanOrEqual(1);
    expect((await api("DELETE", `/sandboxes/${s.id}`, key)).status).toBe(204);
    await expect(held.done).rejects.toThrow(/aborted|socket hang up|ECONNRESET/);
    const after = await openStream(cluster.dataPlanePort, s.id, s.app.port, "/hold?ms=0").done.catch(
      (e: Error) => e,
    );
    expect(String(after)).toMatch(/502 .*The sandbox was not found/);
    const samples = await scrape();
    expect(
      sampleOf(samples, "agentbox_dataplane_requests_total", { port_class: "none", code: "5xx" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleOf(samples, "agentbox_dataplane_requests_total", { port_class: "other" }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleOf(samples, "agentbox_dataplane_response_head_seconds_count", { port_class: "other" }),
    ).toBeGreaterThanOrEqual(1);
  });
});
