// The SandboxPool an Env wants for one member, rendered from the Env alone (plus its template and
// whether its pull Secret exists): the same inputs always give the same pool, so any run can
// create it, compare a live pool with it, or patch the difference (upstream's poolrender).
import type { V1ResourceRequirements } from "@kubernetes/client-node";
import {
  ENV_LABEL,
  envImagePullSecretName,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  POOL_TEMPLATE_NAME_ANNOTATION,
  POOL_TEMPLATE_VERSION_ANNOTATION,
  SCALING_GROUP_LABEL,
} from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPoolSpec } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import {
  type EnvClusterMember,
  isSnapshotMember,
  memberReplicas,
  scalingGroupOf,
} from "../membership/env-members.ts";
import { memberSizing } from "./instance-sizing.ts";
import type { InstanceTypeCatalog } from "./instance-types.ts";
import { currentRevision, revisionAnnotations, type TemplateRevision } from "./member-revision.ts";

/** OWNED_SPEC_FIELDS are the pool spec fields an Env sets on its members (and reverts when changed). */
export const OWNED_SPEC_FIELDS = [
  "replicas",
  "templateName",
  "defaultStartupTimeout",
  "defaultIdleTimeout",
  "podCreationImagePolicy",
  "template",
  "idleImage",
  "runtimes",
] as const;

/** TEMPLATE_SPEC_FIELDS are the owned fields that come from the template (EmbeddedSandboxTemplate). */
const TEMPLATE_SPEC_FIELDS: ReadonlySet<string> = new Set(["template", "idleImage", "runtimes"]);

/** RenderedMember is the pool an Env wants for a member, as far as the Env decides it. */
export interface RenderedMember {
  name: string;
  /** labels and annotations the Env stamps (values win over the live pool's). */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** spec holds the owned fields with a value; an owned field it lacks is removed from the pool. */
  spec: Partial<SandboxPoolSpec> & { replicas: number };
  /** owned lists the spec fields the Env decides for this member now. */
  owned: readonly string[];
  /**
   * complete: the render has a pod template, so the pool may be created. An incomplete render
   * (template missing, or not at the pinned version) still owns replicas and the Env overrides,
   * but leaves the template fields of an existing pool alone.
   */
  complete: boolean;
  /** problem says why the render is incomplete. */
  problem?: string;
  /** resources are the member's InstanceType × Multiplier, when the catalog resolves its type. */
  resources?: V1ResourceRequirements;
  /** sizingProblem: the member names a type the catalog does not resolve (the render is incomplete). */
  sizingProblem?: string;
}

/** MemberInputs are what a render needs besides the Env: its template and its pull Secret. */
export interface MemberInputs {
  /** template is the Env's templateRef, or null when it does not exist. */
  template: SandboxTemplate | null;
  /** pullSecret: the Secret ips-<env> exists in the Env's namespace. */
  pullSecret: boolean;
  /** catalog is the instance type catalog, undefined when its ConfigMap does not exist. */
  catalog?: InstanceTypeCatalog | undefined;
  /**
   * revision is the template revision to render from (the one the member's pool records, see
   * member-view.ts); without one, the template as it is now (when it is at the pinned version).
   */
  revision?: TemplateRevision | undefined;
}

type Record_ = Record<string, unknown>;

function isRecord(v: unknown): v is Record_ {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** PodTemplateChanges are the per-pool changes to a template's pod template. */
interface PodTemplateChanges {
  /** image replaces the first container's image (the Env's overrides.image). */
  image?: string | undefined;
  /** resources replace the first container's resources (InstanceType × Multiplier, or inlineResources). */
  resources?: unknown;
  /** pullSecret is added to imagePullSecrets once (the Env's ips-<env> Secret). */
  pullSecret?: string | undefined;
}

/** podTemplate applies the per-pool changes to a copy of a pod template. */
function podTemplate(source: Record_ | undefined, changes: PodTemplateChanges): Record_ | undefined {
  if (source === undefined) return undefined;
  const out = structuredClone(source);
  const spec: Record_ = isRecord(out.spec) ? out.spec : {};
  const containers = Array.isArray(spec.containers) ? spec.containers : [];
  const first = containers[0];
  if (isRecord(first) && changes.image) first.image = changes.image;
  if (isRecord(first) && changes.resources) first.resources = changes.resources;
  const name = changes.pullSecret;
  if (name) {
    const current = Array.isArray(spec.imagePullSecrets) ? spec.imagePullSecrets : [];
    if (!current.some((s) => isRecord(s) && s.name === name)) spec.imagePullSecrets = [...current, { name }];
  }
  if (isRecord(out.spec) || spec.imagePullSecrets !== undefined) out.spec = spec;
  return out;
}

/** withManagedKeys records which label and annotation keys came from the Env's sources. */
function withManagedKeys(
  annotations: Record<string, string>,
  labelKeys: readonly string[],
  annotationKeys: readonly string[],
): Record<string, string> {
  return {
    ...annotations,
    [MANAGED_LABEL_KEYS_ANNOTATION]: JSON.stringify([...labelKeys].sort()),
    [MANAGED_ANNOTATION_KEYS_ANNOTATION]: JSON.stringify([...annotationKeys].sort()),
  };
}

/** envLabels are the identity labels every member pool carries (scaling group only when set). */
function envLabels(env: SandboxEnv, member: EnvClusterMember): Record<string, string> {
  const group = scalingGroupOf(member);
  return { [ENV_LABEL]: env.metadata?.name ?? "", ...(group ? { [SCALING_GROUP_LABEL]: group } : {}) };
}

/**
 * renderMember renders one member's pool:
 * - a snapshot member (spec with a pod template) is its spec verbatim, with its metadata's labels
 *   and annotations;
 * - any other member is its template revision (inputs.revision: what its pool records; else the
 *   Env's template as it is now, at the pinned version when one is pinned) with the Env's
 *   overrides (image on the first container, podCreationImagePolicy, default timeouts) and
 *   the member's config (labels, annotations; the first container's resources are InstanceType ×
 *   Multiplier when the catalog resolves its type, else its inline resources, else the template's);
 *   replicas are the member's spec.replicas (else config.minReplicas, else 0); the template's
 *   labels and annotations are synced as for a standalone pool, and template-name/template-version
 *   and the revision (its copy, revisionAnnotations) recorded. A type the catalog does
 *   not resolve makes the render incomplete (memberSizing).
 * Both get the Env and scaling-group labels, the pull Secret when it exists, and the managed
 * label/annotation keys, so a key later dropped from the source is removed from the pool.
 */
export function renderMember(
  env: SandboxEnv,
  member: EnvClusterMember,
  inputs: MemberInputs,
): RenderedMember {
  const pullSecret = inputs.pullSecret ? envImagePullSecretName(env.metadata?.name ?? "") : undefined;
  if (isSnapshotMember(member) && member.spec) {
    const spec = { ...member.spec };
    const template = podTemplate(spec.template, { pullSecret });
    if (template) spec.template = template;
    const own = { labels: member.metadata?.labels ?? {}, annotations: member.metadata?.annotations ?? {} };
    return {
      name: member.name,
      labels: { ...own.labels, ...envLabels(env, member) },
      annotations: withManagedKeys(own.annotations, Object.keys(own.labels), Object.keys(own.annotations)),
      spec,
      owned: OWNED_SPEC_FIELDS,
      complete: true,
    };
  }
  const ref = env.spec.templateRef;
  const found = inputs.template;
  // A type the catalog cannot size leaves the pod template alone, as a missing template does.
  const sizing = memberSizing(member, inputs.catalog);
  const source = inputs.revision ?? currentRevision(env, found);
  const template = sizing.problem ? undefined : source;
  const problem = source
    ? sizing.problem
    : !found
      ? `SandboxTemplate "${ref.name}" does not exist`
      : `SandboxTemplate "${ref.name}" is at version "${found.spec.version ?? ""}", the Env pins "${ref.version}"`;
  const config: Partial<NonNullable<EnvClusterMember["config"]>> = member.config ?? {};
  const overrides = env.spec.overrides ?? {};
  const labels = { ...template?.labels, ...config.labels };
  const annotations = { ...template?.annotations, ...config.annotations };
  const spec: RenderedMember["spec"] = {
    replicas: memberReplicas(member),
    templateName: ref.name,
    podCreationImagePolicy: overrides.podCreationImagePolicy ?? "IdleImage",
    ...(overrides.defaultStartupTimeout ? { defaultStartupTimeout: overrides.defaultStartupTimeout } : {}),
    ...(overrides.defaultIdleTimeout ? { defaultIdleTimeout: overrides.defaultIdleTimeout } : {}),
  };
  if (template) {
    const pod = podTemplate(template.template, {
      image: overrides.image,
      resources: sizing.resources ?? config.inlineResources,
      pullSecret,
    });
    if (pod) spec.template = pod;
    if (template.idleImage) spec.idleImage = template.idleImage;
    if (template.runtimes) spec.runtimes = template.runtimes;
  }
  const recorded = { ...annotations, [POOL_TEMPLATE_NAME_ANNOTATION]: ref.name };
  return {
    name: member.name,
    labels: { ...labels, ...envLabels(env, member) },
    // Without the template its labels are unknown, so the managed keys are left as they are.
    annotations: template
      ? withManagedKeys(
          {
            ...recorded,
            [POOL_TEMPLATE_VERSION_ANNOTATION]: template.version,
            ...revisionAnnotations(template),
          },
          Object.keys(labels),
          Object.keys(annotations),
        )
      : recorded,
    spec,
    owned: template ? OWNED_SPEC_FIELDS : OWNED_SPEC_FIELDS.filter((f) => !TEMPLATE_SPEC_FIELDS.has(f)),
    complete: template !== undefined,
    ...(problem ? { problem } : {}),
    ...(sizing.resources ? { resources: sizing.resources } : {}),
    ...(sizing.problem ? { sizingProblem: sizing.problem } : {}),
  };
}
