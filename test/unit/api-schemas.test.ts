// The valibot schemas of lib/crd as runtime validators: parse applies exactly the seed's
// defaults, drops unknown fields, and rejects bad input with Kubernetes-style field paths.
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { InplaceUpdateState } from "../../lib/crd/annotations.ts";
import { AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE, PoolScaleUpPolicy } from "../../lib/crd/autoscaling.ts";
import { Duration } from "../../lib/crd/common.ts";
import { API_VERSION, INPLACE_UPDATE_PHASE, SANDBOX_PHASE_LABEL } from "../../lib/crd/keys.ts";
import {
  parseSandboxEnv,
  parseSandboxEnvSpec,
  parseSandboxPool,
  parseSandboxPoolSpec,
  parseSandboxTemplate,
} from "../../lib/crd/parse.ts";
import type { ApiIssue, ParseResult } from "../../lib/crd/parse-with.ts";

const meta = { name: "demo", namespace: "team-a" };
const pool = (spec: unknown) => ({ apiVersion: API_VERSION, kind: "SandboxPool", metadata: meta, spec });
const env = (spec: unknown) => ({ apiVersion: API_VERSION, kind: "SandboxEnv", metadata: meta, spec });

function ok<T>(result: ParseResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${JSON.stringify(result.issues)}`);
  return result.value;
}

function issues<T>(result: ParseResult<T>): ApiIssue[] {
  if (result.ok) throw new Error("expected issues, got ok");
  return result.issues;
}

function paths<T>(result: ParseResult<T>): string[] {
  return issues(result).map((i) => i.path);
}

describe("defaults", () => {
  it("fills every field of an empty scaleUpPolicy and scaleDownPolicy", () => {
    expect(v.parse(PoolScaleUpPolicy, {})).toEqual({
      mode: "Default",
      cooldownSeconds: 30,
      idleThresholdSeconds: 30,
      idleZeroQuietWindowSeconds: 300,
      saturationCooldownSeconds: 60,
    });
    const spec = ok(
      parseSandboxEnvSpec({ templateRef: { name: "t" }, autoscaling: { groups: [{ name: "g" }] } }),
    );
    expect(spec.autoscaling?.groups?.[0]).toEqual({
      name: "g",
      enabled: false,
      minReplicas: 0,
      scaleUpPolicy: {
        mode: "Default",
        cooldownSeconds: 30,
        idleThresholdSeconds: 30,
        idleZeroQuietWindowSeconds: 300,
        saturationCooldownSeconds: 60,
      },
      scaleDownPolicy: { idleTimeoutSeconds: 300, stabilizationSeconds: 60, protectionWindowSeconds: 10 },
    });
  });

  it("keeps given policy values and defaults only the missing ones", () => {
    const spec = ok(
      parseSandboxEnvSpec({
        templateRef: { name: "t" },
        autoscaling: { groups: [{ name: "g", scaleDownPolicy: { idleTimeoutSeconds: 5 } }] },
      }),
    );
    expect(spec.autoscaling?.groups?.[0]?.scaleDownPolicy).toEqual({
      idleTimeoutSeconds: 5,
      stabilizationSeconds: 60,
      protectionWindowSeconds: 10,
    });
  });

  it("defaults a pool's podCreationImagePolicy to IdleImage and a runtime's protocol to TCP, nothing else", () => {
    const value = ok(parseSandboxPool(pool({ replicas: 2, runtimes: [{ name: "e2b", port: 49983 }] })));
    expect(value.spec).toEqual({
      replicas: 2,
      podCreationImagePolicy: "IdleImage",
      runtimes: [{ name: "e2b", port: 49983, protocol: "TCP" }],
    });
    expect(value.status).toBeUndefined();
  });

  it("defaults an Env's mode to WarmPool and a member's scalingGroup to default", () => {
    const value = ok(
      parseSandboxEnv(
        env({
          templateRef: { name: "t" },
          clusters: [{ clusterID: "c1", members: [{ name: "m", config: {} }] }],
        }),
      ),
    );
    expect(value.spec.mode).toBe("WarmPool");
    expect(value.spec.clusters?.[0]?.members?.[0]?.config?.scalingGroup).toBe("default");
    expect(value.spec.defaults).toBeUndefined();
  });

  it("keeps an explicit empty scalingGroup (excluded from autoscaling)", () => {
    const spec = ok(
      parseSandboxEnvSpec({
        templateRef: { name: "t" },
        clusters: [{ clusterID: "c1", members: [{ name: "m", config: { scalingGroup: "" } }] }],
      }),
    );
    expect(spec.clusters?.[0]?.members?.[0]?.config?.scalingGroup).toBe("");
  });
});

describe("pruning and preserved fields", () => {
  it("drops unknown fields but keeps metadata and schemaless parts whole", () => {
    const template = {
      metadata: { labels: { a: "b" } },
      spec: { containers: [{ name: "c", image: "i", x: { y: 1 } }] },
    };
    const value = ok(
      parseSandboxPool({
        ...pool({
          replicas: 1,
          template,
          bogus: true,
          runtimes: [{ name: "r", config: { any: [1, "two"] } }],
        }),
        metadata: {
          ...meta,
          labels: { [SANDBOX_PHASE_LABEL]: "idle" },
          managedFields: [{ manager: "kubectl" }],
        },
      }),
    );
    expect(value.spec).not.toHaveProperty("bogus");
    expect(value.spec.template).toEqual(template);
    expect(value.spec.runtimes?.[0]?.config).toEqual({ any: [1, "two"] });
    expect(value.metadata?.managedFields).toEqual([{ manager: "kubectl" }]);
  });

  it("parses a template with visibility rules", () => {
    const value = ok(
      parseSandboxTemplate({
        kind: "SandboxTemplate",
        metadata: { name: "t" },
        spec: { version: "v1.2.0", visibility: { rules: [{ team: "a", users: ["u"] }, {}] } },
      }),
    );
    expect(value.spec.visibility?.rules).toEqual([{ team: "a", users: ["u"] }, {}]);
  });
});

describe("rejections carry field paths", () => {
  it("rejects negative, fractional, out-of-range and missing replicas at spec.replicas", () => {
    expect(paths(parseSandboxPool(pool({ replicas: -1 })))).toEqual(["spec.replicas"]);
    expect(paths(parseSandboxPool(pool({ replicas: 1.5 })))).toEqual(["spec.replicas"]);
    expect(paths(parseSandboxPool(pool({ replicas: 2 ** 31 })))).toEqual(["spec.replicas"]);
    expect(paths(parseSandboxPool(pool({})))).toEqual(["spec.replicas"]);
  });

  it("rejects unknown enum values", () => {
    expect(paths(parseSandboxPool(pool({ replicas: 1, podCreationImagePolicy: "Latest" })))).toEqual([
      "spec.podCreationImagePolicy",
    ]);
    expect(paths(parseSandboxEnv(env({ templateRef: { name: "t" }, mode: "Batch" })))).toEqual(["spec.mode"]);
    expect(
      paths(parseSandboxPool(pool({ replicas: 1, runtimes: [{ name: "r", protocol: "HTTP" }] }))),
    ).toEqual(["spec.runtimes[0].protocol"]);
  });

  it("rejects an Aggressive group without maxReplicas at the group, with the seed's message", () => {
    const aggressive = { name: "g", scaleUpPolicy: { mode: "Aggressive" } };
    const unbounded = [{ name: "ok" }, aggressive];
    const found = issues(
      parseSandboxEnv(env({ templateRef: { name: "t" }, autoscaling: { groups: unbounded } })),
    );
    expect(found).toEqual([
      { path: "spec.autoscaling.groups[1]", message: AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE },
    ]);
    const bounded = [{ name: "ok" }, { ...aggressive, maxReplicas: 8 }];
    ok(parseSandboxEnv(env({ templateRef: { name: "t" }, autoscaling: { groups: bounded } })));
  });

  it("rejects a multiplier below 1 on the Env defaults but accepts 0 on a member config", () => {
    expect(paths(parseSandboxEnv(env({ templateRef: { name: "t" }, defaults: { multiplier: 0 } })))).toEqual([
      "spec.defaults.multiplier",
    ]);
    ok(
      parseSandboxEnvSpec({
        templateRef: { name: "t" },
        clusters: [{ clusterID: "c", members: [{ name: "m", config: { multiplier: 0 } }] }],
      }),
    );
  });

  it("rejects a runtime port outside 1..65535", () => {
    expect(paths(parseSandboxPoolSpec({ replicas: 1, runtimes: [{ name: "r", port: 0 }] }))).toEqual([
      "runtimes[0].port",
    ]);
    expect(paths(parseSandboxPool(pool({ replicas: 1, runtimes: [{ name: "r", port: 70000 }] })))).toEqual([
      "spec.runtimes[0].port",
    ]);
  });

  it("rejects duplicate list-map keys at the duplicate item", () => {
    const runtimes = [{ name: "a" }, { name: "b" }, { name: "a" }];
    expect(paths(parseSandboxPool(pool({ replicas: 1, runtimes })))).toEqual(["spec.runtimes[2]"]);
    const clusters = [{ clusterID: "x" }, { clusterID: "x" }];
    expect(paths(parseSandboxEnv(env({ templateRef: { name: "t" }, clusters })))).toEqual([
      "spec.clusters[1]",
    ]);
  });

  it("reports missing required fields and nested paths", () => {
    const spec = {
      templateRef: {},
      clusters: [
        { clusterID: "c", members: [{ name: "m", spec: { replicas: 1, runtimes: [{ port: 80 }] } }] },
      ],
    };
    expect(paths(parseSandboxEnv(env(spec)))).toEqual([
      "spec.templateRef.name",
      "spec.clusters[0].members[0].spec.runtimes[0].name",
    ]);
  });

  it("rejects bad quantities, durations and map values with map-key paths", () => {
    const config = {
      inlineResources: {
        requests: { cpu: "500m", memory: "1Gi", "nvidia.com/gpu": 1 },
        limits: { cpu: "lots" },
      },
    };
    expect(
      paths(
        parseSandboxEnvSpec({
          templateRef: { name: "t" },
          clusters: [{ clusterID: "c", members: [{ name: "m", config }] }],
        }),
      ),
    ).toEqual(["clusters[0].members[0].config.inlineResources.limits.cpu"]);
    expect(paths(parseSandboxPool(pool({ replicas: 1, defaultIdleTimeout: "10 minutes" })))).toEqual([
      "spec.defaultIdleTimeout",
    ]);
    const labels = { "agentbox.navix.sh/env": 3 };
    expect(
      paths(
        parseSandboxEnvSpec({
          templateRef: { name: "t" },
          clusters: [{ clusterID: "c", members: [{ name: "m", metadata: { labels } }] }],
        }),
      ),
    ).toEqual(["clusters[0].members[0].metadata.labels[agentbox.navix.sh/env]"]);
  });

  it("validates status conditions like metav1.Condition", () => {
    const condition = {
      type: "Ready",
      status: "True",
      lastTransitionTime: "2026-01-02T03:04:05Z",
      reason: "Ok",
      message: "",
    };
    ok(parseSandboxPool({ ...pool({ replicas: 1 }), status: { conditions: [condition] } }));
    const bad = { ...condition, status: "Yes", reason: "not ok" };
    expect(paths(parseSandboxPool({ ...pool({ replicas: 1 }), status: { conditions: [bad] } }))).toEqual([
      "status.conditions[0].status",
      "status.conditions[0].reason",
    ]);
  });

  it("rejects a wrong kind or apiVersion but accepts them omitted", () => {
    expect(paths(parseSandboxPool({ ...pool({ replicas: 1 }), kind: "SandboxEnv" }))).toEqual(["kind"]);
    expect(paths(parseSandboxPool({ ...pool({ replicas: 1 }), apiVersion: "agents.navix.sh/v1" }))).toEqual([
      "apiVersion",
    ]);
    ok(parseSandboxPool({ spec: { replicas: 0 } }));
    expect(paths(parseSandboxPool("nope"))).toEqual([""]);
  });
});

describe("Duration", () => {
  it.each(["30s", "1m30s", "2h", "1.5h", "300ms", "0", "-5m", "1h2m3s4ms5us6ns", ".5s", "10µs"])(
    "accepts %s",
    (d) => {
      expect(v.is(Duration, d)).toBe(true);
    },
  );
  it.each(["", "5", "1 m", "10 minutes", "1d", "s", ".s", "1.5", "PT5M"])("rejects %j", (d) => {
    expect(v.is(Duration, d)).toBe(false);
  });
});

describe("annotation shapes", () => {
  it("parses an InplaceUpdateState written by Go (null timestamp, extra fields kept)", () => {
    const raw = {
      phase: "starting",
      targetImages: { main: "img:2" },
      updateTimestamp: null,
      stableContainerStatuses: { main: { containerID: "containerd://abc", restartCount: 0 } },
      future: 1,
    };
    const state = v.parse(InplaceUpdateState, raw);
    expect(state.phase).toBe(INPLACE_UPDATE_PHASE.STARTING);
    expect(state.future).toBe(1);
    expect(v.is(InplaceUpdateState, { ...raw, phase: "paused" })).toBe(false);
  });
});
