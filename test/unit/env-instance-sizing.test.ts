import { describe, expect, it } from "vitest";
import type { EnvClusterMember, SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { parseInstanceTypeCatalog } from "../../lib/env/instance-types.ts";
import { type EnvSnapshot, planEnv } from "../../lib/env/plan-env.ts";
import { renderMember } from "../../lib/env/render-member.ts";
import type { Action } from "../../lib/kube/action.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";

// Env members sized from the instance type catalog: the first container's resources and the
// status's effectiveResources are InstanceType × Multiplier; a type the catalog does not resolve
// leaves the member's pool alone and reports it Inconsistent.

const NOW = new Date("2026-11-23T12:00:00Z");
const SOURCE = "agentbox-system/agentbox-instance-types";
const CATALOG = parseInstanceTypeCatalog(SOURCE, {
  small: JSON.stringify({ cpu: "500m", memory: "1Gi", multiplier: { max: 4 } }),
  gpu: JSON.stringify({
    cpu: "4",
    memory: "16Gi",
    gpu: { count: 1, type: "nvidia-l4" },
    multiplier: { max: 2 },
  }),
});
const TEMPLATE: SandboxTemplate = {
  metadata: { name: "python" },
  spec: {
    version: "v1",
    template: {
      spec: {
        containers: [
          { name: "main", image: "py:1", resources: { requests: { cpu: "1", "ephemeral-storage": "1Gi" } } },
          { name: "side", image: "side:1", resources: { requests: { cpu: "100m" } } },
        ],
      },
    },
    idleImage: "idle:1",
  },
};

const member = (
  name: string,
  config: Partial<NonNullable<EnvClusterMember["config"]>>,
): EnvClusterMember => ({
  name,
  config: { scalingGroup: name, ...config },
});
function env(...members: EnvClusterMember[]): SandboxEnv {
  return {
    metadata: { name: "py", namespace: "ns", uid: "env-uid", resourceVersion: "3", generation: 1 },
    spec: { templateRef: { name: "python" }, mode: "WarmPool", clusters: [{ clusterID: "local", members }] },
  };
}
const snap = (e: SandboxEnv, pools: SandboxPool[], catalog = CATALOG): EnvSnapshot => ({
  env: e,
  pools,
  template: TEMPLATE,
  pullSecret: false,
  pods: [],
  catalog,
});
const containers = (spec: { template?: Record<string, unknown> }) =>
  (spec.template?.spec as { containers?: { resources?: unknown }[] } | undefined)?.containers ?? [];
const observed = (actions: Action[]) => {
  const write = actions.find((a) => a.write.op === "patch-status")?.write;
  const status =
    write?.op === "patch-status" ? (write.patch[1] as { value: SandboxEnv["status"] }).value : undefined;
  return status?.clusters?.find((c) => c.clusterID === "local")?.observedMembers ?? [];
};
/** livePool is the pool an earlier run created for the member, rendered with `catalog`. */
function livePool(e: SandboxEnv, m: EnvClusterMember, catalog = CATALOG): SandboxPool {
  const r = renderMember(e, m, { template: TEMPLATE, pullSecret: false, catalog });
  return {
    metadata: {
      name: m.name,
      namespace: "ns",
      uid: `${m.name}-uid`,
      resourceVersion: "11",
      labels: r.labels,
      annotations: r.annotations,
      ownerReferences: [envOwnerReference(e, true)],
    },
    spec: r.spec as SandboxPool["spec"],
    status: {},
  };
}

describe("members sized from the instance type catalog", () => {
  it("give the first container InstanceType × Multiplier, over inline resources, and report it", () => {
    const gpu = member("gpu", {
      instanceType: "gpu",
      multiplier: 2,
      inlineResources: { requests: { cpu: "99" } },
    });
    const e = env(gpu, member("plain", { inlineResources: { requests: { cpu: "3" } } }));
    const actions = planEnv(snap(e, []), "local", NOW);
    const created = actions
      .filter((a) => a.write.op === "create")
      .map((a) => (a.write.op === "create" ? (a.write.object as SandboxPool) : undefined));
    const gpuList = { cpu: "8", memory: "32Gi", "nvidia.com/gpu": "2" };
    // The template's own resources of that container are replaced, as inlineResources replace them.
    expect(containers(created[0]?.spec ?? {})[0]?.resources).toEqual({ requests: gpuList, limits: gpuList });
    expect(containers(created[0]?.spec ?? {})[1]?.resources).toEqual({ requests: { cpu: "100m" } });
    expect(containers(created[1]?.spec ?? {})[0]?.resources).toEqual({ requests: { cpu: "3" } });
    expect(observed(actions)).toMatchObject([
      {
        name: "gpu",
        instanceType: "gpu",
        multiplier: 2,
        effectiveResources: { requests: gpuList, limits: gpuList },
      },
      { name: "plain", effectiveResources: { requests: { cpu: "3" } } },
    ]);
  });

  it("without a catalog, keep their inline or template resources and echo the shape, as before", () => {
    const small = member("small", { instanceType: "small", multiplier: 2 });
    const actions = planEnv({ ...snap(env(small), []), catalog: undefined }, "local", NOW);
    const created = actions[0]?.write.op === "create" ? (actions[0].write.object as SandboxPool) : undefined;
    expect(containers(created?.spec ?? {})[0]?.resources).toEqual({
      requests: { cpu: "1", "ephemeral-storage": "1Gi" },
    });
    expect(observed(actions)).toMatchObject([
      {
        name: "small",
        instanceType: "small",
        multiplier: 2,
        effectiveResources: { requests: { cpu: "1", "ephemeral-storage": "1Gi" } },
      },
    ]);
  });

  it("resize a live member when the catalog changes its type (a pod template patch)", () => {
    const small = member("small", { instanceType: "small", multiplier: 2 });
    const e = env(small);
    const pool = livePool(e, small);
    expect(
      planEnv(snap({ ...e, status: { clusters: [] } }, [pool]), "local", NOW).map((a) => a.write.op),
    ).toEqual(["patch-status"]);
    const bigger = parseInstanceTypeCatalog(SOURCE, {
      small: JSON.stringify({ cpu: "1", memory: "1Gi", multiplier: { max: 4 } }),
    });
    const actions = planEnv(snap(e, [pool], bigger), "local", NOW);
    const patch = actions.find((a) => a.target.kind === "SandboxPool")?.write;
    expect(patch?.op === "patch" && patch.patch.map((op) => op.path)).toContain("/spec/template");
  });

  it("naming a type the catalog does not resolve: no pool made, a live one left alone, Inconsistent", () => {
    const huge = member("huge", { instanceType: "huge", multiplier: 1 });
    const wide = member("wide", { instanceType: "small", multiplier: 5 });
    const created = planEnv(snap(env(huge), []), "local", NOW);
    expect(created.map((a) => a.write.op)).toEqual(["patch-status"]);
    expect(observed(created)).toMatchObject([{ name: "huge", state: "Missing" }]);

    // wide's pool was made while the catalog allowed ×5; now it does not: nothing is patched.
    const allowed = parseInstanceTypeCatalog(SOURCE, {
      small: JSON.stringify({ cpu: "500m", memory: "1Gi", multiplier: { max: 8 } }),
    });
    const e = env(wide);
    const pool = livePool(e, wide, allowed);
    const actions = planEnv(snap(e, [pool]), "local", NOW);
    expect(actions.map((a) => `${a.write.op} ${a.target.kind}`)).toEqual(["patch-status SandboxEnv"]);
    const [report] = observed(actions);
    expect(report).toMatchObject({
      name: "wide",
      state: "Inconsistent",
      // What its pods have: the pool as it is.
      effectiveResources: {
        requests: { cpu: "2500m", memory: "5Gi" },
        limits: { cpu: "2500m", memory: "5Gi" },
      },
    });
    const write = actions[0]?.write;
    const status =
      write?.op === "patch-status" ? (write.patch[1] as { value: SandboxEnv["status"] }).value : undefined;
    const consistent = status?.conditions?.find((c) => c.type === "TemplateConsistent");
    expect(consistent?.message).toContain(
      'multiplier 5 is outside [1, 4], the range instance type "small" declares',
    );
  });
});
