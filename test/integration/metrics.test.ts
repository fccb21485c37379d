import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { POOL_PHASES } from "../../lib/metrics/metrics.ts";
import { parseExposition, type Samples, sampleOf } from "../../lib/metrics/parse-exposition.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The test host's /metrics: behind its token, both threads in one exposition, and the figures
// moving as a sandbox is created and released in a pool the host reconciles on audit events.

const { core, cluster } = kube();
const t = tenantPool("metrics", "metrics");

const host = (
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
) =>
  httpsRequest(`https://127.0.0.1:${cluster.hostPort}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    ...init,
  });
const scrape = async (): Promise<Samples> => {
  const res = await host("/metrics", { headers: { authorization: `Bearer ${cluster.metricsToken}` } });
  expect(res.status).toBe(200);
  return parseExposition(res.body);
};

describe("/metrics", () => {
  it("answers only the metrics token", async () => {
    expect((await host("/metrics")).status).toBe(401);
    expect((await host("/metrics", { headers: { authorization: "Bearer not-the-token" } })).status).toBe(401);
  });

  it("follows a sandbox through its pool's gauges, the claim, its phases, the API and the apiserver", async () => {
    const pool = { namespace: t.ns, pool: "p", sandbox_env: "" };
    const before = await until("the pool's gauges: 1 desired, 1 idle", 60_000, async () => {
      const s = await scrape();
      return sampleOf(s, "agentbox_sandboxpool_replicas_desired", pool) === 1 &&
        sampleOf(s, "agentbox_sandboxpool_replicas_idle", pool) === 1
        ? s
        : undefined;
    });
    const api = (method: string, path: string, body?: unknown) =>
      host(path, {
        method,
        headers: { "x-api-key": t.key, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await api("POST", "/v1/sandboxes", { pool: `${t.ns}/p`, wait: true, waitTimeout: 30 });
    expect(created.status).toBe(201);
    const { sandboxId } = JSON.parse(created.body) as { sandboxId: string };
    // Snapshots (E2B's memory checkpoints) are not served: 501, counted. Pause is served (issue #39).
    expect((await api("POST", `/e2b/sandboxes/${sandboxId}/snapshots`)).status).toBe(501);
    // Metrics, logs and network rules are served now (issue #38): answered, never counted as unsupported.
    const served = [
      await api("GET", `/e2b/sandboxes/${sandboxId}/metrics`),
      await api("GET", `/e2b/sandboxes/${sandboxId}/logs`),
      await api("GET", `/e2b/v2/sandboxes/${sandboxId}/logs`),
      await api("PUT", `/e2b/sandboxes/${sandboxId}/network`, { denyOut: ["192.0.2.0/24"] }),
    ];
    expect(served.map((r) => r.status)).not.toContain(501);
    expect(served.map((r) => r.status)).not.toContain(404);
    expect((await api("DELETE", `/v1/sandboxes/${sandboxId}`)).status).toBe(204);
    await until("the pod back to idle", 60_000, async () => {
      const pods = (await core.listNamespacedPod({ namespace: t.ns })).items;
      return pods.length === 1 && pods.every((p) => phaseOf(p) === "idle");
    });
    const s = await until("the pool's gauges back to 1 idle, the recycle observed", 60_000, async () => {
      const now = await scrape();
      return sampleOf(now, "agentbox_sandboxpool_replicas_idle", pool) === 1 &&
        (sampleOf(now, "agentbox_sandbox_recycle_duration_seconds_count") ?? 0) >= 1
        ? now
        : undefined;
    });
    // The pool's own series: every phase, this pool's create and delete.
    for (const phase of POOL_PHASES)
      expect(sampleOf(s, `agentbox_sandboxpool_replicas_${phase}`, pool), phase).toBeTypeOf("number");
    expect(sampleOf(s, "agentbox_sandbox_create_total", { namespace: t.ns, pool: "p" })).toBe(1);
    expect(sampleOf(s, "agentbox_sandbox_delete_total", { namespace: t.ns, pool: "p" })).toBe(1);
    // Host-wide series (other tests share this host): grown since before this sandbox, by at
    // least its share.
    const atLeastOne = (name: string, labels: Record<string, string> = {}) =>
      expect(
        (sampleOf(s, name, labels) ?? 0) - (sampleOf(before, name, labels) ?? 0),
        `${name} ${JSON.stringify(labels)}`,
      ).toBeGreaterThanOrEqual(1);
    atLeastOne("agentbox_sandbox_claim_duration_seconds_count", { outcome: "claimed" });
    atLeastOne("agentbox_sandbox_starting_duration_seconds_count");
    atLeastOne("agentbox_sandbox_running_duration_seconds_count");
    atLeastOne("agentbox_inplace_update_total", { direction: "start" });
    atLeastOne("agentbox_inplace_update_total", { direction: "stop" });
    atLeastOne("agentbox_e2b_unsupported_total", { operation: "snapshot" });
    for (const operation of ["metrics", "logs", "network", "pause", "resume"])
      expect(sampleOf(s, "agentbox_e2b_unsupported_total", { operation }), operation).toBeUndefined();
    atLeastOne("agentbox_http_requests_total", { method: "POST", route: "/v1/sandboxes", code: "201" });
    atLeastOne("agentbox_http_requests_total", { method: "DELETE", route: "/v1/sandboxes/:id", code: "204" });
    // The API thread's claim and the reconciler thread's writes, in one series.
    atLeastOne("agentbox_apiserver_requests_total", { verb: "patch", resource: "pods", code: "200" });
    atLeastOne("agentbox_apiserver_request_duration_seconds_count", { verb: "get", resource: "pods" });
    atLeastOne("agentbox_audit_events_total");
    atLeastOne("agentbox_audit_lag_seconds_count");
    // Route templates only: no sandbox ID ever becomes a label value.
    expect(s.samples.filter((x) => JSON.stringify(x.labels).includes(sandboxId))).toEqual([]);
  }, 180_000);

  it("backs every query of the Grafana dashboard with a metric this host exports", async () => {
    const dashboard = JSON.parse(readFileSync("infra/grafana/agentbox-dashboard.json", "utf8")) as {
      panels: { type: string; title: string; targets?: { expr: string }[] }[];
      templating: { list: { query?: { query?: string } | string }[] };
    };
    const graphs = dashboard.panels.filter((p) => p.type !== "row");
    const queries = [
      ...graphs.flatMap((p) => {
        expect(p.targets?.length, `panel "${p.title}" has queries`).toBeGreaterThan(0);
        return (p.targets ?? []).map((t) => ({ where: p.title, expr: t.expr }));
      }),
      ...dashboard.templating.list.flatMap((v) =>
        typeof v.query === "object" && v.query.query ? [{ where: "variables", expr: v.query.query }] : [],
      ),
    ];
    const { families } = await scrape();
    const named = queries.flatMap(({ where, expr }) =>
      [...expr.matchAll(/\b(agentbox_[a-z0-9_]+)/g)].map((m) => ({ where, name: m[1] ?? "" })),
    );
    // A histogram's series (_bucket, _count, _sum) belong to the family its # TYPE line names.
    const family = (name: string) => name.replace(/_(bucket|count|sum)$/, "");
    const missing = named.filter(({ name }) => !families.has(name) && !families.has(family(name)));
    expect(missing).toEqual([]);
    // The four areas the dashboard is for, each queried.
    const all = new Set(named.map(({ name }) => family(name)));
    for (const name of [
      "agentbox_sandboxpool_replicas_idle",
      "agentbox_sandbox_claim_duration_seconds",
      "agentbox_autoscaler_decisions_total",
      "agentbox_tick_last_success_timestamp_seconds",
      "agentbox_audit_lag_seconds",
    ])
      expect(all.has(name), name).toBe(true);
  });
});
