import { describe, expect, it } from "vitest";
import type { CatalogLookup } from "../../lib/admission/instance-type-checks.ts";
import { parseAdmissionReview } from "../../lib/admission/review.ts";
import { catalogToRead, validateRequest, validationIssues } from "../../lib/admission/validate.ts";
import { parseInstanceTypeCatalog } from "../../lib/env/instance-types.ts";

// The SandboxEnv checks that need the instance type catalog (and the one that keeps a scaling
// group to one shape), in the style of admission.test.ts.

const GROUP = "agents.navix.sh";
const SOURCE = "agentbox-system/agentbox-instance-types";

const env = (spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: "SandboxEnv",
  metadata: { name: "e", namespace: "n" },
  spec: { templateRef: { name: "t" }, ...spec },
});
const member = (name: string, config: Record<string, unknown> = {}) => ({ name, config });
const members = (...list: ReturnType<typeof member>[]) => ({
  clusters: [{ clusterID: "local", members: list }],
});
const found: CatalogLookup = {
  source: SOURCE,
  catalog: parseInstanceTypeCatalog(SOURCE, {
    small: JSON.stringify({ cpu: "2", memory: "4Gi", multiplier: { min: 1, max: 8 } }),
    gpu: JSON.stringify({ cpu: "8", memory: "64Gi", gpu: { count: 1, type: "nvidia-l4" } }),
    broken: JSON.stringify({ cpu: "2" }),
  }),
};
const missing: CatalogLookup = { source: SOURCE, catalog: undefined };
const unreadable: CatalogLookup = { source: SOURCE, error: "get configmap: 503 Service Unavailable" };
const issues = (obj: unknown, lookup: CatalogLookup = found) => validationIssues("SandboxEnv", obj, lookup);
const paths = (obj: unknown, lookup?: CatalogLookup) => issues(obj, lookup).map((i) => i.path);

function review(object: unknown, operation = "CREATE", oldObject?: unknown) {
  const parsed = parseAdmissionReview({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid: "u1",
      kind: { group: GROUP, version: "v1alpha1", kind: "SandboxEnv" },
      operation,
      object,
      ...(oldObject ? { oldObject } : {}),
    },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value.request;
}

describe("SandboxEnv instance types against the catalog", () => {
  it("accepts types of the catalog with multipliers in their range", () => {
    const e = env({
      defaults: { instanceType: "small", multiplier: 1 },
      ...members(member("a", { instanceType: "small", multiplier: 8 }), member("b", { scalingGroup: "" })),
    });
    expect(issues(e)).toEqual([]);
  });

  it.each([
    [
      "a member's type not in the catalog",
      env(members(member("a", { instanceType: "huge", multiplier: 1 }))),
      "spec.clusters[0].members[0].config.instanceType",
      'instance type "huge" is not in the instance type catalog (ConfigMap agentbox-system/agentbox-instance-types); it has: gpu, small [instance-type-in-catalog]',
    ],
    [
      "a default type not in the catalog",
      env({ defaults: { instanceType: "huge", multiplier: 1 } }),
      "spec.defaults.instanceType",
      'instance type "huge" is not in',
    ],
    [
      "a type whose catalog entry is invalid",
      env(members(member("a", { instanceType: "broken", multiplier: 1 }))),
      "spec.clusters[0].members[0].config.instanceType",
      'instance type "broken" is invalid in the instance type catalog (ConfigMap agentbox-system/agentbox-instance-types): memory: required',
    ],
    [
      "a member's multiplier above its type's range",
      env(members(member("a", { instanceType: "small", multiplier: 9 }))),
      "spec.clusters[0].members[0].config.multiplier",
      'multiplier 9 is outside [1, 8], the range instance type "small" declares',
    ],
    [
      "a default multiplier outside a type that declares none (×1 only)",
      env({ defaults: { instanceType: "gpu", multiplier: 2 } }),
      "spec.defaults.multiplier",
      "multiplier 2 is outside [1, 1]",
    ],
  ])("denies %s at %s", (_what, obj, path, says) => {
    const found = issues(obj).filter((i) => i.path === path);
    expect(found).toHaveLength(1);
    expect(found[0]?.message).toContain(says);
  });

  it("denies a scaling group that mixes shapes, naming the group and both members", () => {
    const e = env(
      members(
        member("a", { instanceType: "small", multiplier: 1 }),
        member("b", { instanceType: "small", multiplier: 2 }),
        member("c", { instanceType: "gpu", multiplier: 1, scalingGroup: "gpu" }),
      ),
    );
    expect(issues(e)).toEqual([
      {
        path: "spec.clusters[0].members[1].config",
        message:
          'scaling group "default" mixes instance shapes: member "b" has instanceType small x2, member "a" (spec.clusters[0].members[0]) has instanceType small x1; a group\'s members share one shape [scaling-group-uniform-resources]',
      },
    ]);
  });

  it("fails closed when the catalog could not be read, and only checks names against one that exists", () => {
    const e = env(members(member("a", { instanceType: "huge", multiplier: 1 })));
    expect(issues(e, unreadable)).toEqual([
      {
        path: "spec.clusters[0].members[0].config.instanceType",
        message: `cannot be checked: the instance type catalog (ConfigMap ${SOURCE}) could not be read (get configmap: 503 Service Unavailable); retry [instance-type-in-catalog]`,
      },
    ]);
    expect(paths(e, missing)).toEqual([]);
    // The rules that need no catalog still apply without one.
    const noMultiplier = env(members(member("a", { instanceType: "small" })));
    expect(paths(noMultiplier, missing)).toEqual(["spec.clusters[0].members[0].config.multiplier"]);
    expect(paths(noMultiplier)).toEqual(["spec.clusters[0].members[0].config.multiplier"]);
  });
});

describe("validating an Env review with the catalog", () => {
  const named = env(members(member("a", { instanceType: "huge", multiplier: 1 })));

  it("reads the catalog only for a create or spec update of an Env naming a type", () => {
    expect(catalogToRead(review(named))).toBe(true);
    expect(catalogToRead(review(env(members(member("a")))))).toBe(false);
    expect(catalogToRead(review(named, "DELETE"))).toBe(false);
  });

  it("denies what the catalog refuses, and admits what no catalog can check, as before the catalog", () => {
    const denied = validateRequest(review(named), found).response;
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toContain("spec.clusters[0].members[0].config.instanceType");
    expect(validateRequest(review(named), missing).response).toEqual({ uid: "u1", allowed: true });
  });

  it("lets an update that leaves the spec alone through, whatever the catalog says", () => {
    const relabelled = { ...named, metadata: { ...named.metadata, labels: { a: "b" } } };
    expect(validateRequest(review(relabelled, "UPDATE", named), unreadable).response.allowed).toBe(true);
  });
});
