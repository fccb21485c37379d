import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { EnvClusterMember } from "../../lib/crd/sandbox-env.ts";
import {
  memberSizing,
  resolveInstanceType,
  scaledResources,
  scaleQuantity,
} from "../../lib/env/instance-sizing.ts";
import {
  ConfigMapRefSetting,
  catalogProblems,
  parseInstanceTypeCatalog,
} from "../../lib/env/instance-types.ts";

// The instance type catalog (a ConfigMap's data) parsed entry by entry, and members sized from it.

const SOURCE = "agentbox-system/agentbox-instance-types";
const catalog = (data: Record<string, unknown>) =>
  parseInstanceTypeCatalog(
    SOURCE,
    Object.fromEntries(
      Object.entries(data).map(([k, e]) => [k, typeof e === "string" ? e : JSON.stringify(e)]),
    ),
  );
const CATALOG = catalog({
  small: { cpu: "2", memory: "4Gi", multiplier: { min: 1, max: 8 } },
  "gpu-a100": { cpu: 8, memory: "64Gi", gpu: { count: 1, type: "nvidia-a100" }, multiplier: { max: 4 } },
  fixed: { cpu: "500m", memory: "512Mi" },
});
const member = (config: Partial<NonNullable<EnvClusterMember["config"]>>) =>
  ({ name: "m", config }) as EnvClusterMember;

describe("parseInstanceTypeCatalog", () => {
  it("reads each key as an instance type, with its defaults", () => {
    expect(CATALOG.invalid.size).toBe(0);
    expect(CATALOG.types.get("small")).toEqual({
      name: "small",
      cpu: "2",
      memory: "4Gi",
      multiplier: { min: 1, max: 8 },
    });
    expect(CATALOG.types.get("gpu-a100")).toMatchObject({
      cpu: "8",
      gpu: { count: 1, type: "nvidia-a100", resourceName: "nvidia.com/gpu" },
      multiplier: { min: 1, max: 4 },
    });
    // No declared range: the type is used at ×1 only.
    expect(CATALOG.types.get("fixed")?.multiplier).toEqual({ min: 1, max: 1 });
  });

  it("names the entry and the field of every problem, and keeps the valid entries", () => {
    const c = catalog({
      ok: { cpu: "1", memory: "1Gi" },
      "no-json": "{cpu: 1",
      list: [],
      bad: {
        cpu: "-1",
        memory: "lots",
        gpu: { count: 0, type: "" },
        multiplier: { min: 4, max: 2 },
        colour: "red",
      },
      "bad-range": { cpu: "1", memory: "1Gi", multiplier: { min: 4, max: 2 } },
      "bad-gpu": { cpu: "1", memory: "1Gi", gpu: { count: 1, type: "t4", resourceName: "gpu" } },
      missing: { cpu: "1" },
    });
    expect([...c.types.keys()]).toEqual(["ok"]);
    expect(c.invalid.get("no-json")?.[0]).toMatch(/^is not JSON/);
    expect(c.invalid.get("list")).toEqual(['must be a JSON object such as {"cpu": "2", "memory": "4Gi"}']);
    expect(c.invalid.get("bad")).toEqual(
      expect.arrayContaining([
        "cpu: must be a quantity above zero such as 2, 500m or 4Gi",
        "memory: must be a quantity above zero such as 2, 500m or 4Gi",
        "gpu.count: must be at least 1 (GPUs per Pod at multiplier 1)",
        "gpu.type: must name the GPU model",
        "colour: unknown field",
      ]),
    );
    expect(c.invalid.get("bad-range")).toEqual(["multiplier.max: must not be below multiplier.min"]);
    expect(c.invalid.get("bad-gpu")).toEqual([
      "gpu.resourceName: must be an extended resource name such as nvidia.com/gpu",
    ]);
    expect(c.invalid.get("missing")).toEqual(["memory: required"]);
    expect(catalogProblems(c)).toContain('entry "missing": memory: required');
  });

  it("is empty for a ConfigMap without data", () => {
    const c = parseInstanceTypeCatalog(SOURCE, undefined);
    expect(c.types.size + c.invalid.size).toBe(0);
  });
});

describe("the catalog setting", () => {
  it('reads "namespace/name" and refuses anything else', () => {
    expect(v.parse(ConfigMapRefSetting, "ops/types")).toEqual({ namespace: "ops", name: "types" });
    for (const bad of ["types", "ops/", "Ops/types", "a/b/c"])
      expect(v.safeParse(ConfigMapRefSetting, bad).success).toBe(false);
  });
});

describe("InstanceType × Multiplier", () => {
  it("multiplies quantities exactly, keeping their suffix", () => {
    expect(scaleQuantity("500m", 3)).toBe("1500m");
    expect(scaleQuantity("4Gi", 2)).toBe("8Gi");
    expect(scaleQuantity("1.5", 3)).toBe("4.5");
    expect(scaleQuantity("0.1", 3)).toBe("0.3");
    expect(scaleQuantity(".5", 2)).toBe("1");
    expect(scaleQuantity("1e3", 2)).toBe("2e3");
  });

  it("multiplies CPU, memory and the GPU count, as requests and limits", () => {
    const type = CATALOG.types.get("gpu-a100");
    if (!type) throw new Error("gpu-a100 is missing");
    const list = { cpu: "24", memory: "192Gi", "nvidia.com/gpu": "3" };
    expect(scaledResources(type, 3)).toEqual({ requests: list, limits: list });
  });

  it("resolves a type only with a multiplier in its declared range", () => {
    expect(resolveInstanceType(CATALOG, "small", 8)).toMatchObject({ ok: true });
    expect(resolveInstanceType(CATALOG, "small", 9)).toEqual({
      ok: false,
      field: "multiplier",
      problem: `multiplier 9 is outside [1, 8], the range instance type "small" declares in the instance type catalog (ConfigMap ${SOURCE})`,
    });
    expect(resolveInstanceType(CATALOG, "huge", 1)).toEqual({
      ok: false,
      field: "instanceType",
      problem: `instance type "huge" is not in the instance type catalog (ConfigMap ${SOURCE}); it has: fixed, gpu-a100, small`,
    });
    const broken = catalog({ small: { cpu: "1" } });
    expect(resolveInstanceType(broken, "small", 1)).toMatchObject({
      field: "instanceType",
      problem: expect.stringContaining('instance type "small" is invalid in the instance type catalog'),
    });
  });

  it("sizes a member from the catalog; without a catalog or a type, not at all", () => {
    expect(memberSizing(member({ instanceType: "small", multiplier: 2 }), CATALOG)).toEqual({
      resources: {
        requests: { cpu: "4", memory: "8Gi" },
        limits: { cpu: "4", memory: "8Gi" },
      },
    });
    expect(memberSizing(member({ instanceType: "small", multiplier: 2 }), undefined)).toEqual({});
    expect(memberSizing(member({ inlineResources: { requests: { cpu: "1" } } }), CATALOG)).toEqual({});
    expect(memberSizing(member({ instanceType: "huge", multiplier: 1 }), CATALOG).problem).toMatch(
      /"huge" is not in the instance type catalog/,
    );
  });
});
