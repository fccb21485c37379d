import type { V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { EnvAutoscalingGroup } from "../../lib/crd/autoscaling.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { EnvClusterMember, SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { autoscalingStalls, STALL_REASON } from "../../lib/env/autoscaling-stall.ts";
import type { MemberView } from "../../lib/env/member-report.ts";
import { planEnv } from "../../lib/env/plan-env.ts";
import { renderMember } from "../../lib/env/render-member.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { encodeMark, PENDING_REQUESTS_PREFIX } from "../../lib/pool/pending-requests.ts";
import { REPLICA_FAILURE } from "../../lib/pool/pool-status.ts";
import { envWithMembers } from "../support/env-member.ts";

// When an enabled group has stalled (issue #26), decided on plain data with a fixed `now`: one
// case per reason, the cases that are not stalls, and the condition the Env status then carries.

const NOW = new Date("2026-11-23T12:00:00Z");
const TEMPLATE: SandboxTemplate = {
  metadata: { name: "python" },
  spec: { version: "v1", template: { spec: { containers: [{ name: "main", image: "py:1" }] } } },
};

type Config = NonNullable<EnvClusterMember["config"]>;
const member = (name: string, replicas: number, config: Partial<Config> = {}): EnvClusterMember => ({
  name,
  spec: { replicas } as EnvClusterMember["spec"],
  config: { scalingGroup: "default", ...config } as Config,
});

function env(members: EnvClusterMember[], group: Partial<EnvAutoscalingGroup> = {}): SandboxEnv {
  // The group as the apiserver stores it: every policy field defaulted.
  return envWithMembers(members, {
    autoscaling: { groups: [v.parse(EnvAutoscalingGroup, { name: "default", enabled: true, ...group })] },
  });
}

interface PoolOptions {
  /** pending: creates waiting on the pool, as one host's fresh mark says. */
  pending?: number;
  status?: SandboxPool["status"];
}

/** memberPool is the pool an earlier run created for a member, rendered from `template`. */
function memberPool(e: SandboxEnv, m: EnvClusterMember, o: PoolOptions = {}): SandboxPool {
  const r = renderMember(e, m, { template: TEMPLATE, pullSecret: false });
  const pending: Record<string, string> = o.pending
    ? { [`${PENDING_REQUESTS_PREFIX}host-a`]: encodeMark({ count: o.pending, at: NOW }) }
    : {};
  return {
    metadata: {
      name: m.name,
      namespace: "ns",
      uid: `${m.name}-uid`,
      labels: r.labels,
      annotations: { ...r.annotations, ...pending },
      ownerReferences: [envOwnerReference(e, true)],
    },
    spec: r.spec as SandboxPool["spec"],
    ...(o.status ? { status: o.status } : {}),
  };
}

/** pods are `n` pods of the pool in `phase`. */
function pods(pool: SandboxPool, n: number, phase = "running"): V1Pod[] {
  return Array.from({ length: n }, (_, i) => ({
    metadata: {
      name: `${pool.metadata?.name}-${phase}-${i}`,
      namespace: "ns",
      labels: { [SANDBOX_POOL_LABEL]: pool.metadata?.name ?? "", [SANDBOX_PHASE_LABEL]: phase },
      ownerReferences: [poolOwnerReference(pool)],
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  }));
}

const refused = (message: string): SandboxPool["status"] => ({
  conditions: [
    {
      type: REPLICA_FAILURE,
      status: "True",
      reason: "FailedCreate",
      message,
      lastTransitionTime: "2026-11-23T11:00:00Z",
    },
  ],
});

/** stalls decides the Env's groups with its members' pools (by name) and pods, template as given. */
function stalls(
  e: SandboxEnv,
  pools: SandboxPool[],
  allPods: V1Pod[] = [],
  template: SandboxTemplate | null = TEMPLATE,
) {
  const members = e.spec.clusters?.[0]?.members ?? [];
  const views: MemberView[] = members.map((m) => ({
    member: m,
    pool: pools.find((p) => p.metadata?.name === m.name),
    rendered: renderMember(e, m, { template, pullSecret: false }),
  }));
  return autoscalingStalls(e, views, allPods, "local", NOW);
}

describe("autoscalingStalls", () => {
  it("a group whose members can grow, or have no waiting creates, has not stalled", () => {
    const a = member("a", 2, { maxReplicas: 2 });
    const b = member("b", 1);
    const e = env([a, b], { maxReplicas: 10 });
    const [pa, pb] = [memberPool(e, a, { pending: 3 }), memberPool(e, b)];
    // a is at its maxReplicas with creates waiting, but b can still grow.
    expect(stalls(e, [pa, pb], [...pods(pa, 2), ...pods(pb, 1)])).toEqual([]);
    // Nobody waits: a member at its maxReplicas is no stall.
    expect(stalls(e, [memberPool(e, a), pb], pods(pa, 2))).toEqual([]);
  });

  it("a disabled group never stalls, whatever its bounds", () => {
    const a = member("a", 0, { maxReplicas: 1 });
    const e = env([a], { enabled: false, minReplicas: 5 });
    expect(stalls(e, [memberPool(e, a)])).toEqual([]);
  });

  it.each<[string, EnvClusterMember[], Partial<EnvAutoscalingGroup>, RegExp]>([
    [
      "minReplicas above what every capped member can hold",
      [member("a", 1, { maxReplicas: 3 }), member("b", 1, { maxReplicas: 4 })],
      { minReplicas: 10 },
      /minReplicas 10 is above what its members can hold \(their maxReplicas add up to 7\)/,
    ],
    [
      "maxReplicas below the members' minReplicas",
      [member("a", 2, { minReplicas: 2 }), member("b", 2, { minReplicas: 2 })],
      { maxReplicas: 3 },
      /maxReplicas 3 is below its members' minReplicas \(they add up to 4\)/,
    ],
    [
      "a member's minReplicas above its maxReplicas",
      [member("a", 1, { minReplicas: 3, maxReplicas: 1 })],
      {},
      /member a: minReplicas 3 is above its maxReplicas 1/,
    ],
    [
      "the group's minReplicas above its maxReplicas",
      [member("a", 1)],
      { minReplicas: 4, maxReplicas: 2 },
      /minReplicas 4 is above maxReplicas 2/,
    ],
  ])("BoundsUnsatisfiable: %s", (_what, members, group, message) => {
    const e = env(members, group);
    const [stall] = stalls(
      e,
      members.map((m) => memberPool(e, m)),
    );
    expect(stall).toMatchObject({ group: "default", reason: STALL_REASON.BOUNDS_UNSATISFIABLE });
    expect(stall?.message).toMatch(message);
  });

  it("a member with no uncapped sibling and the group's minimum within reach is no bounds problem", () => {
    const members = [member("a", 3, { maxReplicas: 3 }), member("b", 0)];
    const e = env(members, { minReplicas: 10 });
    expect(
      stalls(
        e,
        members.map((m) => memberPool(e, m)),
      ),
    ).toEqual([]);
  });

  it("TemplateCannotRender: the template renders pods that cannot exist, or a member without a pool has no template", () => {
    const a = member("a", 1);
    const e = env([a]);
    const broken: SandboxTemplate = {
      ...TEMPLATE,
      spec: { ...TEMPLATE.spec, template: { spec: { containers: [] } } },
    };
    const [noContainers] = stalls(e, [memberPool(e, a)], [], broken);
    expect(noContainers).toMatchObject({ reason: STALL_REASON.TEMPLATE_CANNOT_RENDER });
    expect(noContainers?.message).toMatch(
      /a: pods cannot be rendered: spec\.template\.spec\.containers: must list/,
    );
    const [missing] = stalls(e, [], [], null);
    expect(missing).toMatchObject({ reason: STALL_REASON.TEMPLATE_CANNOT_RENDER });
    expect(missing?.message).toMatch(/a: SandboxTemplate "python" does not exist/);
    // A member whose pool exists keeps serving from it while the template is gone: no stall.
    expect(stalls(e, [memberPool(e, a)], [], null)).toEqual([]);
  });

  it("MembersFailing: every member's pod creates are refused for a reason no wait cures", () => {
    const [a, b] = [member("a", 1), member("b", 1)];
    const e = env([a, b]);
    const denied = refused('admission webhook "policy.example" denied the request: privileged');
    const [stall] = stalls(e, [memberPool(e, a, { status: denied }), memberPool(e, b, { status: denied })]);
    expect(stall).toMatchObject({ reason: STALL_REASON.MEMBERS_FAILING });
    expect(stall?.message).toMatch(
      /^every member's pods are refused: a: FailedCreate: admission webhook .*; b: /,
    );
    // One member still creating pods: not every member fails.
    expect(stalls(e, [memberPool(e, a, { status: denied }), memberPool(e, b)])).toEqual([]);
    // A quota refusal is saturation (Insufficient), not a failure, and only matters with demand.
    const quota = refused('pods "x" is forbidden: exceeded quota: q');
    expect(stalls(e, [memberPool(e, a, { status: quota }), memberPool(e, b, { status: quota })])).toEqual([]);
  });

  it("GroupAtMaxReplicas: creates wait that nothing serves, and the group is at its maxReplicas", () => {
    const a = member("a", 2);
    const e = env([a], { maxReplicas: 2 });
    const pa = memberPool(e, a, { pending: 3 });
    const [stall] = stalls(e, [pa], pods(pa, 2));
    expect(stall).toEqual({
      group: "default",
      reason: STALL_REASON.GROUP_AT_MAX_REPLICAS,
      message: "3 create(s) wait that no pod will serve, and the group is at its maxReplicas (2)",
    });
    // An idle pod serves the one create waiting: no stall.
    const served = memberPool(e, a, { pending: 1 });
    expect(stalls(e, [served], [...pods(served, 1), ...pods(served, 1, "idle")])).toEqual([]);
  });

  it("MembersSaturated: creates wait, and every member is at its maxReplicas, cooling down or refused", () => {
    const a = member("a", 2, { maxReplicas: 2 });
    const b = member("b", 1);
    const c = member("c", 1);
    const e = env([a, b, c]);
    const pa = memberPool(e, a, { pending: 2 });
    const pb = memberPool(e, b, {
      status: {
        autoscaling: {
          lastScaleUpAttemptTime: "2026-11-23T11:59:50Z",
          lastScaleUpAttemptResult: "Insufficient",
          scaleUpErrorMessage: "1 pod(s) Pending as Unschedulable",
        },
      },
    });
    const pc = memberPool(e, c, {
      status: refused("pods is invalid: spec.containers[0].image: Required value"),
    });
    const all = [...pods(pa, 2), ...pods(pb, 1), ...pods(pc, 1)];
    const [stall] = stalls(e, [pa, pb, pc], all);
    expect(stall).toMatchObject({ group: "default", reason: STALL_REASON.MEMBERS_SATURATED });
    expect(stall?.message).toBe(
      "2 create(s) wait that no pod will serve, and no member can grow: a: at its maxReplicas (2); b: saturated until 2026-11-23T12:00:50Z (Insufficient: 1 pod(s) Pending as Unschedulable); c: FailedCreate: pods is invalid: spec.containers[0].image: Required value",
    );
    // The cooldown over, b may grow again.
    const later = autoscalingStalls(
      e,
      [a, b, c].map((m, i) => ({
        member: m,
        pool: [pa, pb, pc][i],
        rendered: renderMember(e, m, { template: TEMPLATE, pullSecret: false }),
      })),
      all,
      "local",
      new Date("2026-11-23T12:01:00Z"),
    );
    expect(later).toEqual([]);
  });
});

describe("AutoscalingActive", () => {
  it("is False with the stall's reason and a message naming the group", () => {
    const members = [member("a", 1, { maxReplicas: 1 })];
    const e = env(members, { minReplicas: 3 });
    const actions = planEnv(
      {
        env: e,
        pools: members.map((m) => memberPool(e, m)),
        template: TEMPLATE,
        pullSecret: false,
        pods: [],
      },
      "local",
      NOW,
    );
    const write = actions.find((a) => a.target.kind === "SandboxEnv")?.write;
    const status =
      write?.op === "patch-status"
        ? (write.patch.at(-1) as { value: SandboxEnv["status"] }).value
        : undefined;
    expect(status?.conditions?.find((c) => c.type === "AutoscalingActive")).toMatchObject({
      status: "False",
      reason: "BoundsUnsatisfiable",
      message:
        "group default has stalled (BoundsUnsatisfiable): bounds that can never be met: minReplicas 3 is above what its members can hold (their maxReplicas add up to 1)",
    });
  });
});
