import type { V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { between, observations } from "../../lib/kube/action.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import { poolExposition } from "../../lib/metrics/pool-exposition.ts";
import { poolGauges, setPoolGauges } from "../../lib/metrics/pool-gauges.ts";
import { inplaceDirection, phaseTarget, requestKind } from "../../lib/metrics/request-kind.ts";

describe("requestKind", () => {
  it("names requests as the apiserver's metrics do, never by raw path", () => {
    const kind = (method: KubeRequest["method"], path: string, query?: Record<string, string>) =>
      requestKind({ method, path, ...(query ? { query } : {}) });
    expect(kind("GET", "/api/v1/namespaces/ns/pods/p-0")).toEqual({ verb: "get", resource: "pods" });
    expect(kind("GET", "/api/v1/namespaces/ns/pods")).toEqual({ verb: "list", resource: "pods" });
    expect(kind("GET", "/api/v1/pods", { watch: "1" })).toEqual({ verb: "watch", resource: "pods" });
    expect(kind("PATCH", "/api/v1/namespaces/ns/pods/p-0/status")).toEqual({
      verb: "patch",
      resource: "pods/status",
    });
    expect(kind("POST", "/apis/agents.navix.sh/v1alpha1/namespaces/ns/sandboxpools")).toEqual({
      verb: "create",
      resource: "sandboxpools",
    });
    expect(kind("PUT", "/apis/agents.navix.sh/v1alpha1/sandboxtemplates/t")).toEqual({
      verb: "update",
      resource: "sandboxtemplates",
    });
    expect(kind("DELETE", "/api/v1/namespaces/ns")).toEqual({ verb: "delete", resource: "namespaces" });
    expect(kind("DELETE", "/api/v1/namespaces/ns/pods")).toEqual({
      verb: "deletecollection",
      resource: "pods",
    });
    expect(kind("GET", "/version")).toEqual({ verb: "list", resource: "other" });
  });
});

describe("inplaceDirection", () => {
  const phase = (value: string) => ({
    op: "replace",
    path: "/metadata/labels/agentbox.navix.sh~1sandbox-phase",
    value,
  });
  const image = { op: "replace", path: "/spec/containers/0/image", value: "python:3" };
  const patch = (body: unknown[], path = "/api/v1/namespaces/ns/pods/p-0"): KubeRequest => ({
    method: "PATCH",
    path,
    body,
  });

  it("tells a claim's image swap (start) from a release's (stop)", () => {
    expect(
      inplaceDirection(patch([{ op: "test", path: "/x", value: "idle" }, phase("starting"), image])),
    ).toBe("start");
    expect(inplaceDirection(patch([phase("stopping"), image]))).toBe("stop");
  });

  it("names the phase a pod patch moves to, for the conflicts' transition label", () => {
    expect(phaseTarget(patch([{ op: "test", path: "/x", value: "starting" }, phase("running")]))).toBe(
      "running",
    );
    expect(phaseTarget(patch([image]))).toBeUndefined();
    expect(phaseTarget({ method: "GET", path: "/api/v1/namespaces/ns/pods/p" })).toBeUndefined();
  });

  it("counts no other write: no image replaced, another phase, another resource", () => {
    expect(inplaceDirection(patch([phase("starting")]))).toBeUndefined();
    expect(inplaceDirection(patch([phase("running"), image]))).toBeUndefined();
    expect(
      inplaceDirection(patch([phase("starting"), image], "/api/v1/namespaces/ns/pods/p-0/status")),
    ).toBeUndefined();
    expect(
      inplaceDirection({ method: "PATCH", path: "/api/v1/namespaces/ns/pods/p", body: {} }),
    ).toBeUndefined();
  });
});

describe("pool gauges", () => {
  const pod = (phase: string, terminating = false): V1Pod => ({
    metadata: {
      labels: { "agentbox.navix.sh/sandbox-phase": phase },
      ...(terminating ? { deletionTimestamp: new Date() } : {}),
    },
  });
  const pool = (env?: string): SandboxPool =>
    ({
      metadata: { namespace: "ns", name: "p", ...(env ? { labels: { "agentbox.navix.sh/env": env } } : {}) },
      spec: { replicas: 4 },
    }) as SandboxPool;

  it("counts a snapshot's pods by phase, as the status does, with the pool's Env", () => {
    expect(poolGauges(pool("e"), [pod("idle"), pod("idle"), pod("running"), pod("stopping", true)])).toEqual({
      labels: { namespace: "ns", pool: "p", sandbox_env: "e" },
      values: { desired: 4, idle: 2, running: 1, starting: 0, stopping: 0, failed: 0, outdated: 0 },
    });
  });

  it("moves a pool's series when its Env changes, and drops them when it is gone", async () => {
    const metrics = createMetrics(new Registry());
    const series = async () =>
      (await metrics.registry.getSingleMetric("agentbox_sandboxpool_replicas_idle")?.get())?.values ?? [];
    setPoolGauges(metrics, "ns/p", poolGauges(pool(), [pod("idle")]));
    setPoolGauges(metrics, "ns/p", poolGauges(pool("e"), [pod("idle"), pod("idle")]));
    expect((await series()).map((v) => [v.labels.sandbox_env, v.value])).toEqual([["e", 2]]);
    setPoolGauges(metrics, "ns/p", undefined);
    expect(await series()).toEqual([]);
  });
});

describe("phase observations", () => {
  it("carries the durations that are known, in seconds", () => {
    expect(observations(["starting", 1500], ["running", undefined])).toEqual({
      observe: [{ metric: "starting", seconds: 1.5 }],
    });
    expect(observations(["recycle", undefined])).toEqual({});
    expect(between("2026-11-24T10:00:00Z", "2026-11-24T10:01:00Z")).toBe(60_000);
    expect(between(undefined, "2026-11-24T10:01:00Z")).toBeUndefined();
    expect(between("2026-11-24T10:02:00Z", "2026-11-24T10:01:00Z")).toBeUndefined();
  });
});

describe("poolExposition (the Worker's /metrics)", () => {
  it("writes each phase's gauge per pool from its status, label values escaped", () => {
    const text = poolExposition([
      {
        metadata: { namespace: "ns", name: "p", labels: { "agentbox.navix.sh/env": 'odd"env\\' } },
        spec: { replicas: 3 },
        status: { idleReplicas: 2, runningReplicas: 1 },
      } as unknown as SandboxPool,
    ]);
    expect(text).toContain("# TYPE agentbox_sandboxpool_replicas_idle gauge\n");
    expect(text).toContain(
      'agentbox_sandboxpool_replicas_idle{namespace="ns",pool="p",sandbox_env="odd\\"env\\\\"} 2\n',
    );
    expect(text).toContain(
      'agentbox_sandboxpool_replicas_desired{namespace="ns",pool="p",sandbox_env="odd\\"env\\\\"} 3\n',
    );
    expect(text).toContain(
      'agentbox_sandboxpool_replicas_failed{namespace="ns",pool="p",sandbox_env="odd\\"env\\\\"} 0\n',
    );
  });
});
