import { describe, expect, it } from "vitest";
import { latestPerSandbox } from "../../lib/claims/activity.ts";
import {
  pickTemplatePool,
  poolUsableBy,
  usableEnvNames,
  usablePoolNames,
  visibleTemplateNames,
} from "../../lib/claims/pool-choice.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";

const template = (name: string, team?: string) =>
  ({ metadata: { name }, spec: team ? { visibility: { rules: [{ team }] } } : {} }) as SandboxTemplate;
const pool = (name: string, templateName?: string, idle = 0, deleting = false) =>
  ({
    metadata: { name, namespace: "ns", ...(deleting ? { deletionTimestamp: "2026-11-21T00:00:00Z" } : {}) },
    spec: { replicas: 1, ...(templateName ? { templateName } : {}) },
    status: { idleReplicas: idle },
  }) as unknown as SandboxPool;
const alice = { team: "research", user: "alice" };
const bob = { team: "other", user: "bob" };
const admin = { team: "ops", user: "root", admin: true };

describe("pool choice", () => {
  it("lets tenants use pools of templates they can see, or without a template", () => {
    expect(poolUsableBy(undefined, undefined, bob)).toBe(true);
    expect(poolUsableBy("t", template("t", "research"), alice)).toBe(true);
    expect(poolUsableBy("t", template("t", "research"), bob)).toBe(false);
    const pools = [pool("open"), pool("private", "t"), pool("dying", undefined, 0, true)];
    expect(usablePoolNames(pools, [template("t", "research")], bob)).toEqual(["ns/open"]);
    expect(usablePoolNames(pools, [template("t", "research")], alice)).toEqual(["ns/open", "ns/private"]);
    expect(visibleTemplateNames([template("b"), template("a", "research")], bob)).toEqual(["b"]);
  });

  it("closes a pool or Env whose template is gone to all but admins (fails closed)", () => {
    expect(poolUsableBy("ghost", undefined, bob)).toBe(false);
    expect(poolUsableBy("ghost", undefined, admin)).toBe(true);
    const pools = [pool("open"), pool("gone", "ghost")];
    expect(usablePoolNames(pools, [], bob)).toEqual(["ns/open"]);
    expect(usablePoolNames(pools, [], admin)).toEqual(["ns/gone", "ns/open"]);
    const env = (name: string, templateName: string) =>
      ({
        metadata: { name, namespace: "ns" },
        spec: {
          templateRef: { name: templateName },
          clusters: [{ clusterID: "local", members: [{ name: "m" }] }],
        },
      }) as unknown as SandboxEnv;
    const envs = [env("kept", "t"), env("orphan", "ghost"), env("bare", "")];
    expect(usableEnvNames(envs, [template("t")], bob, "local")).toEqual(["ns/bare", "ns/kept"]);
    expect(usableEnvNames(envs, [template("t")], admin, "local")).toEqual([
      "ns/bare",
      "ns/kept",
      "ns/orphan",
    ]);
  });

  it("picks the live pool of a template with the most idle pods", () => {
    const pools = [pool("a", "t", 1), pool("b", "t", 5), pool("c", "t", 9, true), pool("d", "u", 20)];
    expect(pickTemplatePool(pools, "t")?.metadata?.name).toBe("b");
    expect(pickTemplatePool(pools, "none")).toBeUndefined();
  });
});

describe("latestPerSandbox", () => {
  it("keeps each sandbox's latest report, in whole seconds", () => {
    const latest = latestPerSandbox({
      sandboxes: [
        { id: "a", lastActive: "2026-11-21T12:00:00.900Z" },
        { id: "a", lastActive: "2026-11-21T11:00:00Z" },
        { id: "b", lastActive: "2026-11-21T10:00:00Z" },
      ],
    });
    expect([...latest]).toEqual([
      ["a", "2026-11-21T12:00:00Z"],
      ["b", "2026-11-21T10:00:00Z"],
    ]);
  });
});
