import { describe, expect, it } from "vitest";
import type { PoolAutoScalingStatus } from "../../lib/api/autoscaling.ts";
import type { SandboxEnv } from "../../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { routeEnv } from "../../lib/sandboxes/env-route.ts";
import { pickTemplateEnv, usableEnvNames } from "../../lib/sandboxes/pool-choice.ts";

const NOW = new Date("2026-11-23T12:00:00Z");

type M = { name: string; priority?: number; scaleUpPriority?: number; maxReplicas?: number };
function env(
  members: M[],
  extra: Partial<SandboxEnv["spec"]> = {},
  meta: Record<string, unknown> = {},
): SandboxEnv {
  return {
    metadata: { name: "e", namespace: "ns", ...meta },
    spec: {
      templateRef: { name: "t" },
      clusters: [
        {
          clusterID: "local",
          members: members.map(({ name, ...config }) => ({
            name,
            config: { scalingGroup: "default", ...config },
          })),
        },
      ],
      ...extra,
    } as SandboxEnv["spec"],
  };
}

function pool(
  name: string,
  o: {
    idle?: number;
    unavailable?: number;
    replicas?: number;
    autoscaling?: PoolAutoScalingStatus;
    ns?: string;
  } = {},
): SandboxPool {
  return {
    metadata: { name, namespace: o.ns ?? "ns" },
    spec: { replicas: o.replicas ?? 2 } as SandboxPool["spec"],
    status: {
      idleReplicas: o.idle ?? 0,
      unavailableIdleReplicas: o.unavailable ?? 0,
      ...(o.autoscaling ? { autoscaling: o.autoscaling } : {}),
    },
  };
}

const saturated: PoolAutoScalingStatus = {
  lastScaleUpAttemptTime: "2026-11-23T11:59:30Z",
  lastScaleUpAttemptResult: "Insufficient",
};
const names = (r: ReturnType<typeof routeEnv>) => r.members.map((m) => m.name);

describe("routeEnv", () => {
  it("puts members with an idle pod first, then lower priority, then name", () => {
    const e = env([
      { name: "c", priority: 0 },
      { name: "b", priority: 1 },
      { name: "a", priority: 1 },
    ]);
    const r = routeEnv(e, [pool("a", { idle: 1 }), pool("b", { idle: 3 }), pool("c")], "local", NOW);
    expect(names(r)).toEqual(["a", "b", "c"]);
  });

  it("does not count idle pods that are not ready", () => {
    const e = env([
      { name: "a", priority: 1 },
      { name: "b", priority: 0 },
    ]);
    const r = routeEnv(e, [pool("a", { idle: 1 }), pool("b", { idle: 2, unavailable: 2 })], "local", NOW);
    expect(names(r)).toEqual(["a", "b"]);
  });

  it("holds saturated members back as the fallback, until saturationCooldownSeconds passed", () => {
    const e = env([
      { name: "a", priority: 0 },
      { name: "b", priority: 1 },
    ]);
    const pools = [pool("a", { idle: 5, autoscaling: saturated }), pool("b")];
    const r = routeEnv(e, pools, "local", NOW);
    expect(names(r)).toEqual(["b", "a"]);
    expect(r.members.map((m) => m.saturated)).toEqual([false, true]);
    expect(r.grow?.name).toBe("b");
    expect(names(routeEnv(e, pools, "local", new Date("2026-11-23T12:00:30Z")))).toEqual(["a", "b"]);
    const longer = env(
      [
        { name: "a", priority: 0 },
        { name: "b", priority: 1 },
      ],
      {
        autoscaling: { groups: [{ name: "default", scaleUpPolicy: { saturationCooldownSeconds: 120 } }] },
      } as never,
    );
    expect(names(routeEnv(longer, pools, "local", new Date("2026-11-23T12:00:30Z")))).toEqual(["b", "a"]);
  });

  it("skips a member at its maxReplicas with no idle pod, and never grows one at its max", () => {
    const e = env([
      { name: "full", priority: 0, maxReplicas: 2 },
      { name: "busy", priority: 1, maxReplicas: 2 },
      { name: "open", priority: 2 },
    ]);
    const r = routeEnv(e, [pool("full"), pool("busy", { idle: 1 }), pool("open")], "local", NOW);
    expect(names(r)).toEqual(["busy", "open"]);
    expect(r.grow?.name).toBe("open");
  });

  it("grows the first fresh member by scale-up priority, else a saturated one, else none", () => {
    const e = env([
      { name: "a", priority: 0, scaleUpPriority: 5 },
      { name: "b", priority: 1 },
    ]);
    expect(routeEnv(e, [pool("a"), pool("b")], "local", NOW).grow?.name).toBe("b");
    const allSaturated = [pool("a", { autoscaling: saturated }), pool("b", { autoscaling: saturated })];
    expect(routeEnv(e, allSaturated, "local", NOW).grow?.name).toBe("a");
    const capped = env([{ name: "a", maxReplicas: 2 }]);
    expect(routeEnv(capped, [pool("a", { idle: 1 })], "local", NOW).grow).toBeUndefined();
  });

  it("leaves out members whose pool is missing, being deleted or in another namespace, and foreign segments", () => {
    const e = env([{ name: "a" }, { name: "b" }, { name: "c" }, { name: "d" }]);
    const deleting = {
      ...pool("b", { idle: 1 }),
      metadata: { name: "b", namespace: "ns", deletionTimestamp: NOW.toISOString() },
    };
    const r = routeEnv(e, [deleting, pool("c", { ns: "other", idle: 1 }), pool("d")], "local", NOW);
    expect(names(r)).toEqual(["d"]);
    expect(routeEnv(e, [pool("d")], "elsewhere", NOW).members).toEqual([]);
  });
});

describe("Env choice for templates and errors", () => {
  const tenant = { team: "research", user: "alice" };
  const template = (name: string, rules?: unknown[]) =>
    ({ metadata: { name }, spec: { ...(rules ? { visibility: { rules } } : {}) } }) as never;

  it("picks the live Env built on the template with the most idle pods", () => {
    const a = { ...env([{ name: "m" }], {}, { name: "a" }), status: { idleReplicas: 1 } } as SandboxEnv;
    const b = { ...env([{ name: "m" }], {}, { name: "b" }), status: { idleReplicas: 4 } } as SandboxEnv;
    const gone = {
      ...env([{ name: "m" }], {}, { name: "c", deletionTimestamp: NOW }),
      status: { idleReplicas: 9 },
    };
    const empty = { ...env([], {}, { name: "d" }), status: { idleReplicas: 9 } } as SandboxEnv;
    expect(pickTemplateEnv([a, b, gone as SandboxEnv, empty], "t", "local")?.metadata?.name).toBe("b");
    expect(pickTemplateEnv([a, b], "other", "local")).toBeUndefined();
  });

  it("lists only the Envs whose template the tenant may see", () => {
    const open = env([{ name: "m" }], {}, { name: "open" });
    const hidden = {
      ...env([{ name: "m" }], {}, { name: "hidden" }),
      spec: { ...open.spec, templateRef: { name: "x" } },
    };
    const templates = [template("t"), template("x", [{ team: "elsewhere" }])];
    expect(usableEnvNames([hidden as SandboxEnv, open], templates, tenant, "local")).toEqual(["ns/open"]);
  });
});
