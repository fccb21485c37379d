import { describe, expect, it } from "vitest";
import { planClaims } from "../../lib/claims/claim-plan.ts";
import { routeEnv } from "../../lib/claims/env-route.ts";
import { pickTemplateEnv, usableEnvNames } from "../../lib/claims/pool-choice.ts";
import type { PoolAutoScalingStatus } from "../../lib/crd/autoscaling.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";

const NOW = new Date("2026-11-23T12:00:00Z");

type M = { name: string; priority?: number; scaleUpPriority?: number; maxReplicas?: number };
function env(
  members: M[],
  extra: Partial<SandboxEnv["spec"]> = {},
  meta: Record<string, unknown> = {},
): SandboxEnv {
  return {
    metadata: { name: "e", namespace: "ns", uid: "env-uid", ...meta },
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
    /** owner: the Env that owns the pool (default: the Env `env()` builds). */
    owner?: SandboxEnv | null;
    template?: string;
  } = {},
): SandboxPool {
  const owner = o.owner === undefined ? env([]) : o.owner;
  return {
    metadata: {
      name,
      namespace: o.ns ?? "ns",
      ...(owner ? { ownerReferences: [envOwnerReference(owner, true)] } : {}),
    },
    spec: { replicas: o.replicas ?? 2, templateName: o.template ?? "t" } as SandboxPool["spec"],
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

  it("never grows a member at its maxReplicas, but keeps it to watch (its releases serve waiters)", () => {
    const e = env([
      { name: "full", priority: 0, maxReplicas: 2 },
      { name: "busy", priority: 1, maxReplicas: 2 },
      { name: "open", priority: 2 },
    ]);
    const r = routeEnv(e, [pool("full"), pool("busy", { idle: 1 }), pool("open")], "local", NOW);
    expect(names(r)).toEqual(["busy", "full", "open"]);
    expect(r.members.map((m) => m.atMax)).toEqual([true, true, false]);
    expect(r.grow?.name).toBe("open");
    const allFull = routeEnv(env([{ name: "full", maxReplicas: 2 }]), [pool("full")], "local", NOW);
    expect(names(allFull)).toEqual(["full"]);
    expect(allFull.grow).toBeUndefined();
  });

  it("uses only pools that serve the Env: its own, on its template", () => {
    const e = env([{ name: "mine" }, { name: "standalone" }, { name: "theirs" }, { name: "retemplated" }]);
    const other = env([], {}, { name: "x", uid: "other-uid" });
    const r = routeEnv(
      e,
      [
        pool("mine"),
        pool("standalone", { idle: 3, owner: null }),
        pool("theirs", { idle: 3, owner: other }),
        pool("retemplated", { idle: 3, template: "private" }),
      ],
      "local",
      NOW,
    );
    expect(names(r)).toEqual(["mine"]);
    expect(r.grow?.name).toBe("mine");
  });

  it("registers demand on a member the autoscaler reads before a manual one", () => {
    const e = env(
      [
        { name: "manual", priority: 0 },
        { name: "scaled", priority: 1 },
      ],
      { autoscaling: { groups: [{ name: "default", enabled: true }] } } as never,
    );
    const split = {
      ...e,
      spec: {
        ...e.spec,
        clusters: [
          {
            clusterID: "local",
            members: [
              { name: "manual", config: { scalingGroup: "", priority: 0 } },
              { name: "scaled", config: { scalingGroup: "default", priority: 1 } },
            ],
          },
        ],
      },
    } as SandboxEnv;
    expect(routeEnv(split, [pool("manual"), pool("scaled")], "local", NOW).grow?.name).toBe("scaled");
    const disabled = {
      ...split,
      spec: { ...split.spec, autoscaling: { groups: [{ name: "default", enabled: false }] } },
    } as SandboxEnv;
    expect(routeEnv(disabled, [pool("manual"), pool("scaled")], "local", NOW).grow?.name).toBe("manual");
  });

  it("grows the first fresh member by scale-up priority, else a saturated one (same order), else none", () => {
    const e = env([
      { name: "a", priority: 0, scaleUpPriority: 5 },
      { name: "b", priority: 1 },
    ]);
    expect(routeEnv(e, [pool("a"), pool("b")], "local", NOW).grow?.name).toBe("b");
    const allSaturated = [pool("a", { autoscaling: saturated }), pool("b", { autoscaling: saturated })];
    expect(routeEnv(e, allSaturated, "local", NOW).grow?.name).toBe("b");
    const oneSaturated = [pool("a"), pool("b", { autoscaling: saturated })];
    expect(routeEnv(e, oneSaturated, "local", NOW).grow?.name).toBe("a");
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

describe("planClaims", () => {
  const poolNames = (ps: SandboxPool[]) => ps.map((p) => p.metadata?.name);

  it("tries a pool target alone, watches it, grows it, and keeps the Env it is a member of", () => {
    const e = env([{ name: "a" }]);
    const plan = planClaims({ pool: pool("a"), memberOf: e }, "local", NOW);
    expect(plan).toMatchObject({ where: "ns/a", grow: { metadata: { name: "a" } }, env: e });
    expect(poolNames(plan.tryNow)).toEqual(["a"]);
    expect(poolNames(plan.watch)).toEqual(["a"]);
  });

  it("tries an Env's members with idle pods in route order and watches every member", () => {
    const e = env([
      { name: "a", priority: 0 },
      { name: "b", priority: 1 },
      { name: "c", priority: 2 },
    ]);
    const plan = planClaims(
      { env: e, pools: [pool("a"), pool("b", { idle: 1 }), pool("c", { idle: 2 })] },
      "local",
      NOW,
    );
    expect(plan.where).toBe("env ns/e");
    expect(poolNames(plan.tryNow)).toEqual(["b", "c"]);
    expect(poolNames(plan.watch)).toEqual(["b", "c", "a"]);
    expect(plan.grow?.metadata?.name).toBe("a");
  });

  it("with no idle pod anywhere tries only the member a wait would grow; none when all are at max", () => {
    const e = env([
      { name: "full", priority: 0, maxReplicas: 2 },
      { name: "open", priority: 1 },
    ]);
    expect(
      poolNames(planClaims({ env: e, pools: [pool("full"), pool("open")] }, "local", NOW).tryNow),
    ).toEqual(["open"]);
    const allFull = planClaims(
      { env: env([{ name: "full", maxReplicas: 2 }]), pools: [pool("full")] },
      "local",
      NOW,
    );
    expect(allFull.tryNow).toEqual([]);
    expect(poolNames(allFull.watch)).toEqual(["full"]);
  });

  it("keeps only the members `accept` takes (an instance shape)", () => {
    const e = env([{ name: "a" }, { name: "b" }]);
    const plan = planClaims(
      { env: e, pools: [pool("a", { idle: 1 }), pool("b", { idle: 1 })] },
      "local",
      NOW,
      (m) => m.name === "b",
    );
    expect(poolNames(plan.tryNow)).toEqual(["b"]);
    expect(poolNames(plan.watch)).toEqual(["b"]);
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
