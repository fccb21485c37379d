import { describe, expect, it } from "vitest";
import { routeEnv } from "../../lib/claims/env-route.ts";
import {
  envShapeDecision,
  poolShapeDecision,
  type ShapeDecision,
} from "../../lib/claims/instance-shape-route.ts";
import { CreateSandboxRequest } from "../../lib/claims/schemas.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { nativeCreate } from "../../lib/e2b/requests.ts";
import { envOwnerReference } from "../../lib/membership/env-ownership.ts";

// Which members serve a create that asks for an instance shape (or gets its Env's default one),
// and the 404 that lists the shapes when none has it.

const NOW = new Date("2026-11-23T12:00:00Z");

type Config = { instanceType?: string; multiplier?: number; scalingGroup?: string };
function env(members: [string, Config][], defaults?: SandboxEnv["spec"]["defaults"]): SandboxEnv {
  return {
    metadata: { name: "e", namespace: "ns", uid: "env-uid" },
    spec: {
      templateRef: { name: "t" },
      mode: "WarmPool",
      ...(defaults ? { defaults } : {}),
      clusters: [
        {
          clusterID: "local",
          members: members.map(([name, config]) => ({ name, config: { scalingGroup: name, ...config } })),
        },
        {
          clusterID: "remote",
          members: [{ name: "far", config: { instanceType: "tpu", multiplier: 1, scalingGroup: "" } }],
        },
      ],
    },
  };
}
const ENV = env([
  ["small-1", { instanceType: "small", multiplier: 1 }],
  ["small-2", { instanceType: "small", multiplier: 2 }],
  ["gpu", { instanceType: "gpu-a100", multiplier: 1 }],
  ["legacy", {}],
]);
function pool(name: string, idle = 1, owner = ENV): SandboxPool {
  return {
    metadata: { name, namespace: "ns", ownerReferences: [envOwnerReference(owner, true)] },
    spec: { replicas: 2, templateName: "t" } as SandboxPool["spec"],
    status: { idleReplicas: idle },
  } as SandboxPool;
}
const POOLS = ["small-1", "small-2", "gpu", "legacy"].map((n) => pool(n));

/** served lists the members a create may be served from, in routing order. */
function served(e: SandboxEnv, decision: ShapeDecision, pools = POOLS): string[] {
  if (!decision.ok) throw new Error(decision.message);
  return routeEnv(e, pools, "local", NOW, decision.accept).members.map((m) => m.name);
}

describe("envShapeDecision", () => {
  it("serves a create that names no shape from every member (an Env without defaults)", () => {
    expect(served(ENV, envShapeDecision(ENV, "local", {}))).toEqual(["gpu", "legacy", "small-1", "small-2"]);
  });

  it("routes a create to the members of the type it asks for, and of the multiplier when it names one", () => {
    expect(served(ENV, envShapeDecision(ENV, "local", { instanceType: "gpu-a100" }))).toEqual(["gpu"]);
    expect(served(ENV, envShapeDecision(ENV, "local", { instanceType: "small" }))).toEqual([
      "small-1",
      "small-2",
    ]);
    expect(served(ENV, envShapeDecision(ENV, "local", { instanceType: "small", multiplier: 2 }))).toEqual([
      "small-2",
    ]);
    // The member of that shape is the one that grows for a waiting create, too.
    const decision = envShapeDecision(ENV, "local", { instanceType: "gpu-a100" });
    if (!decision.ok) throw new Error(decision.message);
    const empty = POOLS.map((p) => pool(p.metadata?.name ?? "", 0));
    expect(routeEnv(ENV, empty, "local", NOW, decision.accept).grow?.name).toBe("gpu");
  });

  it("answers a shape no local member has with the shapes the caller may use", () => {
    expect(envShapeDecision(ENV, "local", { instanceType: "tpu" })).toEqual({
      ok: false,
      name: "tpu",
      choices: ["gpu-a100 x1", "small x1", "small x2"],
      message:
        "no member of env ns/e here has instance type tpu; shapes you may use: gpu-a100 x1, small x1, small x2",
    });
    expect(envShapeDecision(ENV, "local", { instanceType: "gpu-a100", multiplier: 4 })).toMatchObject({
      ok: false,
      name: "gpu-a100 x4",
    });
    const bare = env([["legacy", {}]]);
    expect(envShapeDecision(bare, "local", { instanceType: "small" })).toMatchObject({
      ok: false,
      choices: [],
      message: expect.stringContaining("shapes you may use: none (no member names an instance type)"),
    });
  });

  it("gives a create that names no shape the Env's default shape", () => {
    const withDefaults = {
      ...ENV,
      spec: { ...ENV.spec, defaults: { instanceType: "small", multiplier: 2 } },
    };
    expect(served(withDefaults, envShapeDecision(withDefaults, "local", {}))).toEqual(["small-2"]);
    // A shape asked for wins over the defaults.
    expect(
      served(withDefaults, envShapeDecision(withDefaults, "local", { instanceType: "gpu-a100" })),
    ).toEqual(["gpu"]);
    const unserved = { ...ENV, spec: { ...ENV.spec, defaults: { instanceType: "small", multiplier: 3 } } };
    expect(envShapeDecision(unserved, "local", {})).toMatchObject({
      ok: false,
      name: "small x3",
      message: expect.stringContaining(
        "no member of env ns/e here has its default shape small x3 (spec.defaults)",
      ),
    });
  });
});

describe("poolShapeDecision", () => {
  it("holds a pool to the shape of its member, and a standalone pool to none", () => {
    const member = pool("small-2");
    expect(poolShapeDecision(member, ENV, {})).toEqual({ ok: true });
    expect(poolShapeDecision(member, ENV, { instanceType: "small" })).toEqual({ ok: true });
    expect(poolShapeDecision(member, ENV, { instanceType: "gpu-a100" })).toEqual({
      ok: false,
      name: "gpu-a100",
      choices: ["small x2"],
      message: "pool ns/small-2 is not of instance type gpu-a100; its shape: small x2",
    });
    expect(poolShapeDecision(pool("alone"), undefined, { instanceType: "small" })).toMatchObject({
      ok: false,
      choices: [],
    });
    // The Env's defaults are for creates that name the Env, not one of its pools.
    const withDefaults = {
      ...ENV,
      spec: { ...ENV.spec, defaults: { instanceType: "gpu-a100", multiplier: 1 } },
    };
    expect(poolShapeDecision(member, withDefaults, {})).toEqual({ ok: true });
  });
});

describe("asking for a shape", () => {
  it("takes instanceType and multiplier in the native create, a multiplier only with a type", () => {
    const ok = parseWith(CreateSandboxRequest, { env: "ns/e", instanceType: "gpu-a100", multiplier: 2 });
    expect(ok).toMatchObject({ ok: true, value: { instanceType: "gpu-a100", multiplier: 2 } });
    const alone = parseWith(CreateSandboxRequest, { env: "ns/e", multiplier: 2 });
    expect(alone).toMatchObject({
      ok: false,
      issues: [{ message: '"multiplier" needs "instanceType": it multiplies an instance type' }],
    });
    const zero = parseWith(CreateSandboxRequest, { env: "ns/e", instanceType: "a b", multiplier: 0 });
    expect(zero.ok ? [] : zero.issues.map((i) => i.path)).toEqual(["instanceType", "multiplier"]);
  });

  it("takes them from an E2B create's metadata, naming the metadata key when they are wrong", () => {
    const metadata = { "agentbox.instanceType": "gpu-a100", "agentbox.multiplier": "2", user: "u1" };
    expect(nativeCreate({ templateID: "python", metadata } as never)).toMatchObject({
      ok: true,
      value: { template: "python", instanceType: "gpu-a100", multiplier: 2, metadata },
    });
    const bad = nativeCreate({
      templateID: "python",
      metadata: { "agentbox.instanceType": "gpu", "agentbox.multiplier": "two" },
    } as never);
    expect(bad).toEqual({
      ok: false,
      message: "metadata.agentbox.multiplier: must be a whole number (the instance type's multiplier)",
    });
  });
});
