// The generated CustomResourceDefinitions: structural (what the apiserver demands), carrying
// the seed's list-map keys, defaults, CEL rule and subresources, and committed up to date.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { renderCrdFiles } from "../../infra/crds/render.ts";
import {
  AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE,
  AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE,
} from "../../lib/crd/autoscaling.ts";
import { listMap, PreservedObject, Quantity, requiredWithDefault } from "../../lib/crd/common.ts";
import {
  CRDS,
  type CustomResourceDefinition,
  SANDBOX_ENV_CRD,
  SANDBOX_POOL_CRD,
  SANDBOX_TEMPLATE_CRD,
} from "../../lib/crd/definitions.ts";
import { type JSONSchemaProps, toStructuralSchema } from "../../lib/crd/structural-schema.ts";

function rootOf(crd: CustomResourceDefinition): JSONSchemaProps {
  const version = crd.spec.versions[0];
  if (!version) throw new Error("no version");
  return version.schema.openAPIV3Schema;
}

/** walk visits every schema node with its dotted path (`[*]` for list items and map values). */
function walk(node: JSONSchemaProps, visit: (node: JSONSchemaProps, path: string) => void, path = ""): void {
  visit(node, path);
  for (const [name, child] of Object.entries(node.properties ?? {}))
    walk(child, visit, path === "" ? name : `${path}.${name}`);
  if (node.items) walk(node.items, visit, `${path}[*]`);
  if (node.additionalProperties) walk(node.additionalProperties, visit, `${path}{*}`);
  for (const branch of node.anyOf ?? []) walk(branch, visit, `${path}|`);
}

function collect<T>(
  crd: CustomResourceDefinition,
  pick: (node: JSONSchemaProps) => T | undefined,
): Record<string, T> {
  const out: Record<string, T> = {};
  walk(rootOf(crd), (node, path) => {
    const value = pick(node);
    if (value !== undefined) out[path] = value;
  });
  return out;
}

const listMapKeys = (crd: CustomResourceDefinition) =>
  collect(crd, (n) => (n["x-kubernetes-list-type"] === "map" ? n["x-kubernetes-list-map-keys"] : undefined));
const defaults = (crd: CustomResourceDefinition) => collect(crd, (n) => n.default);

describe.each(CRDS.map((crd) => [crd.metadata.name, crd] as const))("%s", (_name, crd) => {
  it("has no $ref, $schema, definitions or closed objects", () => {
    const text = JSON.stringify(crd);
    for (const banned of ['"$ref"', '"$schema"', '"$defs"', '"definitions"', '"additionalProperties":false'])
      expect(text).not.toContain(banned);
  });

  it("gives every node a type, except int-or-string and preserve-unknown-fields nodes", () => {
    walk(rootOf(crd), (node, path) => {
      if (path.endsWith("|")) return; // the anyOf branches of int-or-string
      if (node["x-kubernetes-int-or-string"]) {
        expect(node.type, path).toBeUndefined();
        expect(node.anyOf, path).toEqual([{ type: "integer" }, { type: "string" }]);
      } else if (!node["x-kubernetes-preserve-unknown-fields"]) {
        expect(node.type, path).toBeDefined();
      }
      if (node.anyOf && !node["x-kubernetes-int-or-string"]) throw new Error(`anyOf at ${path}`);
      if (node.type === "array") expect(node.items, path).toBeDefined();
    });
  });

  it("has list-map keys that are scalar and required or defaulted", () => {
    walk(rootOf(crd), (node, path) => {
      if (node["x-kubernetes-list-type"] !== "map") return;
      for (const key of node["x-kubernetes-list-map-keys"] ?? []) {
        const field = node.items?.properties?.[key];
        expect(["string", "integer", "boolean", "number"], `${path} key ${key}`).toContain(field?.type);
        expect(
          node.items?.required?.includes(key) || field?.default !== undefined,
          `${path} key ${key}`,
        ).toBe(true);
      }
    });
  });

  it("declares the envelope like controller-gen and requires spec", () => {
    const root = rootOf(crd);
    expect(root.type).toBe("object");
    expect(root.required).toEqual(["spec"]);
    expect(root.properties?.metadata).toEqual({ type: "object" });
    expect(root.properties?.apiVersion?.type).toBe("string");
    expect(root.properties?.kind?.type).toBe("string");
  });

  it("serves one v1alpha1 storage version with a status subresource and described columns", () => {
    expect(crd.spec.group).toBe("agents.navix.sh");
    expect(crd.spec.versions.map((x) => [x.name, x.served, x.storage])).toEqual([["v1alpha1", true, true]]);
    expect(crd.spec.versions[0]?.subresources.status).toEqual({});
    expect(crd.spec.names.categories).toEqual(["agentbox"]);
    expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.agents.navix.sh`);
    for (const column of crd.spec.versions[0]?.additionalPrinterColumns ?? []) {
      expect(column.description.length, column.name).toBeGreaterThan(0);
    }
  });
});

describe("SandboxTemplate CRD", () => {
  it("is cluster-scoped with its names, columns and list maps", () => {
    expect(SANDBOX_TEMPLATE_CRD.spec.scope).toBe("Cluster");
    expect(SANDBOX_TEMPLATE_CRD.spec.names).toMatchObject({
      kind: "SandboxTemplate",
      listKind: "SandboxTemplateList",
      plural: "sandboxtemplates",
      singular: "sandboxtemplate",
      shortNames: ["sbt"],
    });
    const columns = SANDBOX_TEMPLATE_CRD.spec.versions[0]?.additionalPrinterColumns.map((c) => [
      c.name,
      c.jsonPath,
    ]);
    expect(columns).toEqual([
      ["Version", ".spec.version"],
      ["Age", ".metadata.creationTimestamp"],
    ]);
    expect(listMapKeys(SANDBOX_TEMPLATE_CRD)).toEqual({
      "spec.runtimes": ["name"],
      "status.conditions": ["type"],
    });
    expect(defaults(SANDBOX_TEMPLATE_CRD)).toEqual({ "spec.runtimes[*].protocol": "TCP" });
  });
});

describe("SandboxPool CRD", () => {
  it("is namespaced and scalable through the scale subresource", () => {
    expect(SANDBOX_POOL_CRD.spec.scope).toBe("Namespaced");
    expect(SANDBOX_POOL_CRD.spec.names.shortNames).toEqual(["sbp"]);
    expect(SANDBOX_POOL_CRD.spec.versions[0]?.subresources.scale).toEqual({
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.runningReplicas",
      labelSelectorPath: ".status.selector",
    });
    const columns = SANDBOX_POOL_CRD.spec.versions[0]?.additionalPrinterColumns.map((c) => [
      c.name,
      c.jsonPath,
    ]);
    expect(columns).toEqual([
      ["Phase", ".status.phase"],
      ["Desired", ".spec.replicas"],
      ["Idle", ".status.idleReplicas"],
      ["Running", ".status.runningReplicas"],
      ["Updated", ".status.updatedReplicas"],
      ["Outdated", ".status.outdatedReplicas"],
      ["Age", ".metadata.creationTimestamp"],
    ]);
  });

  it("requires replicas (minimum 0) and defaults the seed's fields and the rollout's maxSurge", () => {
    const spec = rootOf(SANDBOX_POOL_CRD).properties?.spec;
    expect(spec?.required).toEqual(["replicas"]);
    expect(spec?.properties?.replicas).toMatchObject({ type: "integer", format: "int32", minimum: 0 });
    expect(spec?.properties?.template).toMatchObject({
      type: "object",
      "x-kubernetes-preserve-unknown-fields": true,
    });
    // rollout is ours (ADR 0031): its maxSurge shows on every pool.
    expect(defaults(SANDBOX_POOL_CRD)).toEqual({
      "spec.podCreationImagePolicy": "IdleImage",
      "spec.rollout": {},
      "spec.rollout.maxSurge": "25%",
      "spec.runtimes[*].protocol": "TCP",
    });
    expect(listMapKeys(SANDBOX_POOL_CRD)).toEqual({
      "spec.runtimes": ["name"],
      "status.conditions": ["type"],
    });
  });
});

describe("SandboxEnv CRD", () => {
  it("is namespaced with its names and columns", () => {
    expect(SANDBOX_ENV_CRD.spec.scope).toBe("Namespaced");
    expect(SANDBOX_ENV_CRD.spec.names.shortNames).toEqual(["sbe"]);
    expect(SANDBOX_ENV_CRD.spec.versions[0]?.subresources.scale).toBeUndefined();
    const columns = SANDBOX_ENV_CRD.spec.versions[0]?.additionalPrinterColumns.map((c) => [
      c.name,
      c.jsonPath,
      c.type,
    ]);
    expect(columns).toEqual([
      ["Members", ".status.memberCount", "integer"],
      ["Desired", ".status.desiredReplicas", "integer"],
      ["Running", ".status.runningReplicas", "integer"],
      ["Idle", ".status.idleReplicas", "integer"],
      ["Age", ".metadata.creationTimestamp", "date"],
    ]);
  });

  it("keys every +listType=map list the seed declares", () => {
    const member = "spec.clusters[*].members[*]";
    const observed = "status.clusters[*].observedMembers[*]";
    expect(listMapKeys(SANDBOX_ENV_CRD)).toEqual({
      "spec.autoscaling.groups": ["name"],
      "spec.clusters": ["clusterID"],
      "spec.clusters[*].members": ["name"],
      [`${member}.config.inlineResources.claims`]: ["name"],
      [`${member}.spec.runtimes`]: ["name"],
      "status.clusters": ["clusterID"],
      "status.clusters[*].observedMembers": ["name"],
      [`${observed}.effectiveResources.claims`]: ["name"],
      "status.conditions": ["type"],
      "status.scalingGroups": ["name"],
    });
  });

  it("requires templateRef and mode, and defaults the seed's fields (and a member spec's rollout, ours)", () => {
    expect(rootOf(SANDBOX_ENV_CRD).properties?.spec?.required).toEqual(["mode", "templateRef"]);
    const group = "spec.autoscaling.groups[*]";
    expect(defaults(SANDBOX_ENV_CRD)).toEqual({
      "spec.mode": "WarmPool",
      "spec.clusters[*].members[*].config.scalingGroup": "default",
      "spec.clusters[*].members[*].spec.podCreationImagePolicy": "IdleImage",
      "spec.clusters[*].members[*].spec.rollout": {},
      "spec.clusters[*].members[*].spec.rollout.maxSurge": "25%",
      "spec.clusters[*].members[*].spec.runtimes[*].protocol": "TCP",
      [`${group}.enabled`]: false,
      [`${group}.minReplicas`]: 0,
      [`${group}.scaleUpPolicy`]: {},
      [`${group}.scaleUpPolicy.mode`]: "Default",
      [`${group}.scaleUpPolicy.cooldownSeconds`]: 30,
      [`${group}.scaleUpPolicy.idleThresholdSeconds`]: 30,
      [`${group}.scaleUpPolicy.idleZeroQuietWindowSeconds`]: 300,
      [`${group}.scaleUpPolicy.saturationCooldownSeconds`]: 60,
      [`${group}.scaleDownPolicy`]: {},
      [`${group}.scaleDownPolicy.idleTimeoutSeconds`]: 300,
      [`${group}.scaleDownPolicy.stabilizationSeconds`]: 60,
      [`${group}.scaleDownPolicy.protectionWindowSeconds`]: 10,
    });
  });

  it("carries the Aggressive-needs-maxReplicas CEL rule on the autoscaling group", () => {
    const groups = rootOf(SANDBOX_ENV_CRD).properties?.spec?.properties?.autoscaling?.properties?.groups;
    expect(groups?.items?.["x-kubernetes-validations"]).toEqual([
      { rule: AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE, message: AGGRESSIVE_REQUIRES_MAX_REPLICAS_MESSAGE },
    ]);
    expect(AGGRESSIVE_REQUIRES_MAX_REPLICAS_RULE).toBe(
      "self.scaleUpPolicy.mode != 'Aggressive' || has(self.maxReplicas)",
    );
  });
});

describe("toStructuralSchema", () => {
  it("hoists an int-or-string pattern and drops the type, like controller-gen", () => {
    const schema = toStructuralSchema(v.object({ q: Quantity }));
    expect(schema.properties?.q?.anyOf).toEqual([{ type: "integer" }, { type: "string" }]);
    expect(schema.properties?.q?.pattern).toMatch(/^\^/);
    expect(schema.properties?.q?.type).toBeUndefined();
  });

  it("keeps preserve-unknown-fields objects schemaless", () => {
    expect(toStructuralSchema(PreservedObject)).toEqual({
      type: "object",
      "x-kubernetes-preserve-unknown-fields": true,
    });
  });

  it("lists defaulted +required fields as required and turns nullable unions into nullable", () => {
    const schema = toStructuralSchema(
      v.object({
        a: v.optional(requiredWithDefault(v.string()), "x"),
        b: v.optional(v.nullable(v.string())),
      }),
    );
    expect(schema).toEqual({
      properties: { a: { default: "x", type: "string" }, b: { nullable: true, type: "string" } },
      required: ["a"],
      type: "object",
    });
  });

  it("refuses what the apiserver would refuse", () => {
    expect(() => toStructuralSchema(v.object({ x: v.unknown() }))).toThrow(/needs a type/);
    expect(() => toStructuralSchema(v.union([v.object({ a: v.string() }), v.string()]))).toThrow(/anyOf/);
    expect(() => toStructuralSchema(listMap(v.object({ name: v.optional(v.string()) }), "name"))).toThrow(
      /required or defaulted/,
    );
    expect(() => toStructuralSchema(v.tuple([v.string()]))).toThrow(/structural schema/);
  });
});

describe("committed crds/*.yaml", () => {
  it("match a fresh generation (run npm run crds after a schema change)", () => {
    for (const file of renderCrdFiles()) {
      expect(readFileSync(join(import.meta.dirname, "../..", file.path), "utf8"), file.path).toBe(
        file.content,
      );
    }
  });
});
