// The CustomResourceDefinitions of agents.navix.sh/v1alpha1, built from the valibot schemas in
// lib/crd. infra/crds/generate.ts writes them to crds/*.yaml; other code may also install
// them directly (e.g. tests against a throwaway apiserver).
import type * as v from "valibot";
import { GROUP, KIND, RESOURCE, VERSION } from "./keys.ts";
import { SandboxEnv } from "./sandbox-env.ts";
import { SandboxPool } from "./sandbox-pool.ts";
import { SandboxSnapshot } from "./sandbox-snapshot.ts";
import { SandboxTemplate } from "./sandbox-template.ts";
import { type JSONSchemaProps, sortKeys, toStructuralSchema } from "./structural-schema.ts";

/** PrinterColumn is one `kubectl get` column. */
export interface PrinterColumn {
  name: string;
  type: "integer" | "number" | "string" | "boolean" | "date";
  jsonPath: string;
  description: string;
  priority?: number;
  format?: string;
}

/** ScaleSubresource maps the scale subresource onto the object's fields. */
export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

/** CustomResourceDefinitionVersion is one served version of a CRD. */
export interface CustomResourceDefinitionVersion {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: JSONSchemaProps };
  subresources: { status: Record<string, never>; scale?: ScaleSubresource };
  additionalPrinterColumns: PrinterColumn[];
  /** selectableFields are the fields a field selector may name (beyond metadata.name/namespace). */
  selectableFields?: { jsonPath: string }[];
}

/** CustomResourceDefinition is the apiextensions.k8s.io/v1 object, as far as we fill it in. */
export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: "Namespaced" | "Cluster";
    versions: CustomResourceDefinitionVersion[];
  };
}

/** CATEGORY groups the kinds so `kubectl get agentbox` lists all of them. */
export const CATEGORY = "agentbox";

const AGE: PrinterColumn = {
  name: "Age",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
  description: "Time since the object was created.",
};

/**
 * openAPIV3Schema is a kind's root schema. The envelope is declared the way controller-gen
 * does it: apiVersion and kind are plain strings and metadata a bare object (the apiserver
 * validates metadata itself and allows no more than name/generateName restrictions there).
 */
function openAPIV3Schema(kind: v.GenericSchema): JSONSchemaProps {
  const schema = toStructuralSchema(kind);
  if (schema.type !== "object" || schema.properties === undefined)
    throw new Error("a kind must be an object");
  schema.properties.apiVersion = {
    type: "string",
    description: "Versioned schema of this representation of an object; servers may reject unknown values.",
  };
  schema.properties.kind = {
    type: "string",
    description: "REST resource this object represents, in CamelCase; cannot be updated.",
  };
  schema.properties.metadata = { type: "object" };
  return sortKeys(schema) as JSONSchemaProps;
}

interface CrdOptions {
  kind: string;
  plural: string;
  shortName: string;
  scope: "Namespaced" | "Cluster";
  schema: v.GenericSchema;
  columns: PrinterColumn[];
  scale?: ScaleSubresource;
  selectableFields?: { jsonPath: string }[];
}

/** crd assembles one CRD: a single served and stored v1alpha1 version with a status subresource. */
function crd(options: CrdOptions): CustomResourceDefinition {
  const version: CustomResourceDefinitionVersion = {
    name: VERSION,
    served: true,
    storage: true,
    schema: { openAPIV3Schema: openAPIV3Schema(options.schema) },
    subresources: options.scale ? { status: {}, scale: options.scale } : { status: {} },
    additionalPrinterColumns: options.columns,
    ...(options.selectableFields ? { selectableFields: options.selectableFields } : {}),
  };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${options.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: options.kind,
        listKind: `${options.kind}List`,
        plural: options.plural,
        singular: options.kind.toLowerCase(),
        shortNames: [options.shortName],
        categories: [CATEGORY],
      },
      scope: options.scope,
      versions: [version],
    },
  };
}

/** SANDBOX_TEMPLATE_CRD defines the cluster-scoped SandboxTemplate kind. */
export const SANDBOX_TEMPLATE_CRD = crd({
  kind: KIND.SANDBOX_TEMPLATE,
  plural: RESOURCE.SANDBOX_TEMPLATES,
  shortName: "sbt",
  scope: "Cluster",
  schema: SandboxTemplate,
  columns: [
    { name: "Version", type: "string", jsonPath: ".spec.version", description: "Version of the template." },
    AGE,
  ],
});

/** SANDBOX_POOL_CRD defines the namespaced SandboxPool kind, scalable through `/scale`. */
export const SANDBOX_POOL_CRD = crd({
  kind: KIND.SANDBOX_POOL,
  plural: RESOURCE.SANDBOX_POOLS,
  shortName: "sbp",
  scope: "Namespaced",
  schema: SandboxPool,
  scale: {
    specReplicasPath: ".spec.replicas",
    statusReplicasPath: ".status.runningReplicas",
    labelSelectorPath: ".status.selector",
  },
  columns: [
    {
      name: "Phase",
      type: "string",
      jsonPath: ".status.phase",
      description: "High-level state of the pool.",
    },
    { name: "Desired", type: "integer", jsonPath: ".spec.replicas", description: "Desired number of Pods." },
    {
      name: "Idle",
      type: "integer",
      jsonPath: ".status.idleReplicas",
      description: "Pods ready to be claimed.",
    },
    {
      name: "Running",
      type: "integer",
      jsonPath: ".status.runningReplicas",
      description: "Pods running a sandbox.",
    },
    {
      name: "Updated",
      type: "integer",
      jsonPath: ".status.updatedReplicas",
      description: "Pods at the pool's current pod revision.",
    },
    {
      name: "Outdated",
      type: "integer",
      jsonPath: ".status.outdatedReplicas",
      description: "Pods of an older pod revision, being replaced (a rollout).",
    },
    AGE,
  ],
});

/** SANDBOX_ENV_CRD defines the namespaced SandboxEnv kind. */
export const SANDBOX_ENV_CRD = crd({
  kind: KIND.SANDBOX_ENV,
  plural: RESOURCE.SANDBOX_ENVS,
  shortName: "sbe",
  scope: "Namespaced",
  schema: SandboxEnv,
  columns: [
    {
      name: "Members",
      type: "integer",
      jsonPath: ".status.memberCount",
      description: "Member pools across all clusters.",
    },
    {
      name: "Desired",
      type: "integer",
      jsonPath: ".status.desiredReplicas",
      description: "Desired Pods summed over all members.",
    },
    {
      name: "Running",
      type: "integer",
      jsonPath: ".status.runningReplicas",
      description: "Running Pods summed over all members.",
    },
    {
      name: "Idle",
      type: "integer",
      jsonPath: ".status.idleReplicas",
      description: "Idle Pods summed over all members.",
    },
    AGE,
  ],
});

/** SANDBOX_SNAPSHOT_CRD defines the namespaced SandboxSnapshot kind: a paused sandbox (ADR 0045). */
export const SANDBOX_SNAPSHOT_CRD = crd({
  kind: KIND.SANDBOX_SNAPSHOT,
  plural: RESOURCE.SANDBOX_SNAPSHOTS,
  shortName: "sbs",
  scope: "Namespaced",
  schema: SandboxSnapshot,
  // Each node's snapshot agent watches only its own node's snapshots.
  selectableFields: [{ jsonPath: ".spec.source.node" }],
  columns: [
    { name: "Phase", type: "string", jsonPath: ".status.phase", description: "Pause or resume phase." },
    { name: "Pool", type: "string", jsonPath: ".spec.pool", description: "Pool a resume claims from." },
    { name: "Team", type: "string", jsonPath: ".spec.claim.team", description: "Owning team." },
    {
      name: "Bytes",
      type: "integer",
      jsonPath: ".status.bytes",
      description: "Size of the committed layers.",
    },
    {
      name: "Retain-Until",
      type: "date",
      jsonPath: ".spec.retainUntil",
      description: "Deleted with its images after this unless resumed.",
    },
    AGE,
  ],
});

/** CRDS lists every CustomResourceDefinition of the group, templates first (pools reference them). */
export const CRDS: readonly CustomResourceDefinition[] = [
  SANDBOX_TEMPLATE_CRD,
  SANDBOX_POOL_CRD,
  SANDBOX_ENV_CRD,
  SANDBOX_SNAPSHOT_CRD,
];
