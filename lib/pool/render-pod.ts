// The Pod a pool creates for one slot. Everything the pool decides about a new Pod is here, so
// the create step is "render, then POST": no read-modify-write, and a retry renders the same Pod.
import type { V1Pod, V1PodSpec } from "@kubernetes/client-node";
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_SANDBOX_API_SERVER,
  POD_REVISION_LABEL,
  RESET_POLICY_ANNOTATION,
  SANDBOX_PHASE,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  SANDBOX_PROTECTION_FINALIZER,
  SYNC_SOURCE_LABEL,
  TEMPLATE_DOCS_ANNOTATION,
  TEMPLATE_POOL_DOCS_ANNOTATION,
} from "../crd/keys.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { PodReset } from "../lifecycle/release-intent.ts";
import { poolOwnerReference } from "../membership/pod-ownership.ts";
import { canonicalJson } from "../util/canonical-json.ts";
import { sha256Hex } from "../util/sha256.ts";
import { CLAIM_SHARD_LABEL, shardOf } from "./claim-shards.ts";
import { podName } from "./pod-name.ts";

/**
 * LABELS_EXCLUDED_FROM_TEMPLATE_SYNC are template label keys never copied: the sync-source label
 * says where the template itself came from (global key manager or local), not its Pods or pools.
 */
export const LABELS_EXCLUDED_FROM_TEMPLATE_SYNC: ReadonlySet<string> = new Set([SYNC_SOURCE_LABEL]);

/**
 * ANNOTATIONS_EXCLUDED_FROM_TEMPLATE_SYNC are template annotation keys never copied: the docs
 * (and the legacy pool docs) are read live from the template, copies would only go stale.
 */
export const ANNOTATIONS_EXCLUDED_FROM_TEMPLATE_SYNC: ReadonlySet<string> = new Set([
  TEMPLATE_DOCS_ANNOTATION,
  TEMPLATE_POOL_DOCS_ANNOTATION,
]);

type StringMap = Record<string, string>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** merged is dst plus the string entries of src whose key is not excluded (src wins). */
function merged(dst: StringMap, src: unknown, excluded: ReadonlySet<string>): StringMap {
  const out = { ...dst };
  if (!isRecord(src)) return out;
  for (const [key, value] of Object.entries(src)) {
    if (typeof value === "string" && !excluded.has(key)) out[key] = value;
  }
  return out;
}

/**
 * syncLabelsFromTemplate returns dst merged with a template's labels, minus
 * LABELS_EXCLUDED_FROM_TEMPLATE_SYNC; template values win over dst. Callers set their own
 * system keys afterwards, so those win over the template.
 */
export function syncLabelsFromTemplate(dst: StringMap, templateLabels: unknown): StringMap {
  return merged(dst, templateLabels, LABELS_EXCLUDED_FROM_TEMPLATE_SYNC);
}

/**
 * syncAnnotationsFromTemplate returns dst merged with a template's annotations, minus
 * ANNOTATIONS_EXCLUDED_FROM_TEMPLATE_SYNC; callers overwrite system keys afterwards.
 */
export function syncAnnotationsFromTemplate(dst: StringMap, templateAnnotations: unknown): StringMap {
  return merged(dst, templateAnnotations, ANNOTATIONS_EXCLUDED_FROM_TEMPLATE_SYNC);
}

/** templateContainers is the pool template's container list (possibly empty). */
function templateContainers(pool: SandboxPool): Record<string, unknown>[] {
  const spec = pool.spec.template?.spec;
  const containers = isRecord(spec) ? spec.containers : undefined;
  return Array.isArray(containers) ? containers.filter(isRecord) : [];
}

/**
 * idleImages maps each container name to the image an idle Pod of the pool runs: the template's
 * images, except the first container, which runs spec.idleImage when that is set. Releasing a
 * sandbox swaps a Pod back to exactly these images (upstream IdleContainerImages).
 */
export function idleImages(pool: SandboxPool): Record<string, string> {
  const out: Record<string, string> = {};
  templateContainers(pool).forEach((container, i) => {
    if (typeof container.name !== "string") return;
    const image = i === 0 && pool.spec.idleImage ? pool.spec.idleImage : container.image;
    if (typeof image === "string" && image !== "") out[container.name] = image;
  });
  return out;
}

/**
 * podReset is how a released pod of the pool starts afresh: swapped back to (or restarted on)
 * its idle images, or replaced when the pool's RESET_POLICY_ANNOTATION says `Replace` (ADR 0025).
 * During a rollout (ADR 0031) it also carries the pool's current pod revision once the pool's
 * status says `replicas` pods stand at it: a released pod of another revision is then replaced
 * (its successor already stands); before, it is reset in place like any other and, idle, replaced
 * surge-first, so a release early in a rollout never leaves a gap while new pods start.
 */
export function podReset(pool: SandboxPool): PodReset {
  const replace = pool.metadata?.annotations?.[RESET_POLICY_ANNOTATION] === "Replace";
  const revision = podRevision(pool);
  const status = pool.status;
  const covered = status?.updateRevision === revision && (status.updatedReplicas ?? 0) >= pool.spec.replicas;
  return { idleImages: idleImages(pool), ...(covered ? { revision } : {}), ...(replace ? { replace } : {}) };
}

/**
 * lazyPodReset is podReset(pool) computed on the first call and kept: a step hands it to its
 * planners as a ResetSource, so the pool's template is hashed only when a pod is released, and
 * once however many are.
 */
export function lazyPodReset(pool: SandboxPool): () => PodReset {
  let reset: PodReset | undefined;
  return () => {
    reset ??= podReset(pool);
    return reset;
  };
}

/**
 * podSpec is a copy of spec.template.spec with the PodCreationImagePolicy applied. IdleImage
 * (the CRD default, also assumed when unset) starts the first container on spec.idleImage so
 * the Pod becomes idle quickly; PoolDefaultImage keeps the template image, so the first sandbox
 * of the Pod can skip the image swap. A first container without an image (admission allows it
 * when idleImage is set) gets idleImage under either policy. nodeName is dropped: Pods are
 * placed by the scheduler, never pinned by the template.
 */
function podSpec(pool: SandboxPool): V1PodSpec {
  const source = pool.spec.template?.spec;
  const spec = (isRecord(source) ? structuredClone(source) : {}) as unknown as V1PodSpec;
  if (!Array.isArray(spec.containers)) spec.containers = [];
  delete spec.nodeName;
  const first = spec.containers[0];
  const idleImage = pool.spec.idleImage;
  if (first && idleImage) {
    const policy = pool.spec.podCreationImagePolicy ?? "IdleImage";
    if (policy === "IdleImage" || !first.image) first.image = idleImage;
  }
  return spec;
}

/** templateMetadata is what renderPod copies from spec.template.metadata: labels and annotations minus the exclusions. */
function templateMetadata(pool: SandboxPool): { labels: StringMap; annotations: StringMap } {
  const raw = pool.spec.template?.metadata;
  const meta = isRecord(raw) ? raw : {};
  return {
    labels: syncLabelsFromTemplate({}, meta.labels),
    annotations: syncAnnotationsFromTemplate({}, meta.annotations),
  };
}

/**
 * POOLED_POD_GRACE_SECONDS is a pooled pod's terminationGracePeriodSeconds unless its template
 * sets one. A release throws the tenant's state away, so nothing is worth a graceful stop, and the
 * grace is only ever spent on an image whose main process ignores SIGTERM (a bare shell or `sleep`
 * as PID 1): every reset of such a pod then waits it out. Measured on the real node (issue #36):
 * such a reset took 4.6 s with 2 s and 12.1 s with 10 s; Kubernetes' default of 30 s would make it
 * about 32 s. 2 s is also the kubelet's floor for a container stop.
 */
export const POOLED_POD_GRACE_SECONDS = 2;

/** REVISION_LENGTH is how many hex digits of the SHA-256 a pod revision keeps (40 bits). */
const REVISION_LENGTH = 10;

/**
 * podRevision is the revision of the pods the pool renders now: the first 10 hex digits of the
 * SHA-256 of the canonical JSON of what renderPod takes from the pool and an in-place swap cannot
 * change on a live pod: the pod spec (podSpec) with every container's `image` removed, and the
 * template's labels and annotations as rendered onto pods. Images are left out because claims swap
 * the requested images in and releases swap the idle images back (a changed image reaches a pod
 * that way, with no new pod); everything else in the pod template (resources, env, commands,
 * probes, volumes, init containers and their images, scheduling, metadata) only reaches new pods.
 * The pool's name, uid and the per-slot labels are not in it: every pod of a pool shares it.
 */
export function podRevision(pool: SandboxPool): string {
  const spec = podSpec(pool);
  const containers = spec.containers.map(({ image: _image, ...rest }) => rest);
  const text = canonicalJson({ ...templateMetadata(pool), spec: { ...spec, containers } });
  return sha256Hex(text).slice(0, REVISION_LENGTH);
}

/**
 * renderPod is the Pod for slot `slot` of a pool: its deterministic slot name, the pool's
 * namespace, labels (template labels minus the exclusions, then the pool, idle-phase and
 * managed-by labels, which win), template annotations minus the exclusions, the
 * sandbox-protection finalizer (so the control plane always sees a deletion window to record
 * the sandbox's history), a controlling ownerReference to the pool (garbage collection when the
 * pool goes; blockOwnerDeletion so foreground deletion waits for the Pods), and the template's
 * Pod spec with the image policy applied, labelled with its pod revision (`revision`, which a
 * caller rendering many pods computes once). Resources are the template's: every Pod of a pool is
 * the same size; the grace period is POOLED_POD_GRACE_SECONDS unless the template sets one. The
 * pool must have been read from the API server (name, namespace and uid).
 */
export function renderPod(pool: SandboxPool, slot: number, revision = podRevision(pool)): V1Pod {
  const { name, namespace, uid } = pool.metadata ?? {};
  if (!name || !namespace || !uid) {
    throw new Error(
      "renderPod: the pool needs metadata.name, namespace and uid (read it from the API server)",
    );
  }
  const meta = templateMetadata(pool);
  const labels: StringMap = {
    ...meta.labels,
    [SANDBOX_POOL_LABEL]: name,
    [SANDBOX_PHASE_LABEL]: SANDBOX_PHASE.IDLE,
    [MANAGED_BY_LABEL]: MANAGED_BY_SANDBOX_API_SERVER,
    [CLAIM_SHARD_LABEL]: shardOf(slot),
    [POD_REVISION_LABEL]: revision,
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: podName(name, slot),
      namespace,
      labels,
      annotations: meta.annotations,
      finalizers: [SANDBOX_PROTECTION_FINALIZER],
      ownerReferences: [poolOwnerReference(pool)],
    },
    // The default is not part of the revision: pods made before it keep serving, no rollout.
    spec: { terminationGracePeriodSeconds: POOLED_POD_GRACE_SECONDS, ...podSpec(pool) },
  };
}
