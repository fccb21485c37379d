import type { V1Pod } from "@kubernetes/client-node";
import { GROUP, IMAGE_PULL_SECRET_NAME_PREFIX, RESOURCE, SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import { newestVersion } from "../kube/resource-version.ts";

/** AuditEvent is the part of an audit.k8s.io/v1 Event that maps a change to a pool. */
export interface AuditEvent {
  verb: string;
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
  responseStatus?: { code?: number };
  responseObject?: {
    kind?: string;
    apiVersion?: string;
    metadata?: { labels?: Record<string, string>; resourceVersion?: string };
    spec?: unknown;
  };
  requestObject?: { kind?: string; metadata?: { labels?: Record<string, string> } };
}

/** PoolKey names a pool as "namespace/name". */
export type PoolKey = `${string}/${string}`;

const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

/**
 * auditTargets maps one audit batch to the pools whose steps should run, each once: a pod write
 * names its pool through the pod's pool label (the policy records pod writes with their response
 * body), a pool write names the pool itself. Failed requests changed nothing and are skipped;
 * events that cannot be mapped are left to the periodic tick.
 */
export function auditTargets(events: readonly AuditEvent[]): PoolKey[] {
  const keys = new Set<PoolKey>();
  for (const e of events) {
    const ref = e.objectRef;
    if (!ref?.namespace || !WRITES.has(e.verb)) continue;
    if ((e.responseStatus?.code ?? 200) >= 400) continue;
    if (ref.resource === "pods" && !ref.apiGroup) {
      const labels = e.responseObject?.metadata?.labels ?? e.requestObject?.metadata?.labels;
      const pool = labels?.[SANDBOX_POOL_LABEL];
      if (pool) keys.add(`${ref.namespace}/${pool}`);
    } else if (ref.resource === "sandboxpools" && ref.apiGroup === "agents.navix.sh" && ref.name) {
      keys.add(`${ref.namespace}/${ref.name}`);
    }
  }
  return [...keys];
}

/** PodKey names a pool's pod as "namespace/pool/pod". */
export type PodKey = `${string}/${string}/${string}`;

/**
 * auditPodTargets maps one audit batch to the pool pods that were written, each once, with the
 * version to read them at (see PodTarget), so the pod's own transitions (start, stop, failure,
 * deletion) can run on a read of just that pod instead of a list of the whole pool. Where the
 * newest of a pod's writes in the batch recorded the whole pod, the target carries it (reported).
 */
export function auditPodTargets(events: readonly AuditEvent[]): Map<PodKey, PodTarget> {
  const targets = new Map<PodKey, PodTarget>();
  for (const e of events) {
    const ref = e.objectRef;
    if (!ref?.namespace || !ref.name || !WRITES.has(e.verb) || ref.resource !== "pods" || ref.apiGroup)
      continue;
    if ((e.responseStatus?.code ?? 200) >= 400) continue;
    const labels = e.responseObject?.metadata?.labels ?? e.requestObject?.metadata?.labels;
    const pool = labels?.[SANDBOX_POOL_LABEL];
    if (!pool) continue;
    const key: PodKey = `${ref.namespace}/${pool}/${ref.name}`;
    const seen = targets.get(key);
    const version = e.responseObject?.metadata?.resourceVersion;
    // Ordered only when both are plain integers (resourceVersionOf); else a quorum read. A wrong
    // order could only make a read staler, never a write wrong (every write is preconditioned).
    const notOlderThan = seen ? newestVersion(seen.notOlderThan, version) : version;
    const pod = wholePod(e);
    const reported = notOlderThan === undefined ? undefined : notOlderThan === version ? pod : seen?.reported;
    targets.set(key, { notOlderThan, ...(reported ? { reported } : {}) });
  }
  return targets;
}

/**
 * PodTarget says how fresh a pod run's read must be: at least notOlderThan, the newest version the
 * batch reported for the pod (the watch cache can serve that read), or, when undefined, a quorum
 * read of etcd. reported is the pod as the apiserver answered that newest write, when the event
 * recorded it whole (the policy logs pod writes at RequestResponse level): the run looks at it
 * first and reads the pod only when it shows something to do (see reconcilePod).
 */
export interface PodTarget {
  notOlderThan: string | undefined;
  reported?: V1Pod;
}

/**
 * wholePod is the pod an event's response recorded, when it is one: a create, update or patch
 * answered with a v1 Pod that has its version and spec (a delete's answer, a Status, or a body
 * the apiserver truncated is not).
 */
function wholePod(e: AuditEvent): V1Pod | undefined {
  const o = e.responseObject;
  if (e.verb === "delete" || e.verb === "deletecollection") return undefined;
  if (o?.kind !== "Pod" || o.apiVersion !== "v1" || !o.metadata?.resourceVersion || !o.spec) return undefined;
  return o as V1Pod;
}

/** EnvKey names an Env as "namespace/name". */
export type EnvKey = `${string}/${string}`;

/**
 * EnvAuditTargets are what one audit batch asks of the Env step: Envs to run directly (their
 * spec changed, or their ips-<env> pull Secret), and pools and templates whose Envs must be
 * found first (a member pool changed, or the template an Env renders from).
 */
export interface EnvAuditTargets {
  envs: EnvKey[];
  /**
   * pools were written; urgent when the pool itself was (its spec or metadata: a host's pending
   * mark, replicas), not only its status, which busy pools rewrite many times a second.
   */
  pools: { namespace: string; name: string; urgent?: boolean }[];
  templates: string[];
}

/**
 * auditEnvTargets maps one audit batch to what the Env step should look at, each once. Writes to
 * an Env's or a template's status are skipped (the Env and template steps write them, and a
 * status change needs no run; as upstream watches generation changes only); every pool write
 * counts, status and scale included, since the Env mirrors pool status and reverts replica changes.
 */
export function auditEnvTargets(events: readonly AuditEvent[]): EnvAuditTargets {
  const envs = new Set<EnvKey>();
  const pools = new Map<string, { namespace: string; name: string; urgent?: boolean }>();
  const templates = new Set<string>();
  for (const e of events) {
    const ref = e.objectRef;
    if (!ref?.name || !WRITES.has(e.verb) || (e.responseStatus?.code ?? 200) >= 400) continue;
    const ours = ref.apiGroup === GROUP;
    if (ours && ref.resource === RESOURCE.SANDBOX_ENVS && ref.namespace && ref.subresource !== "status")
      envs.add(`${ref.namespace}/${ref.name}`);
    else if (ours && ref.resource === RESOURCE.SANDBOX_POOLS && ref.namespace) {
      const key = `${ref.namespace}/${ref.name}`;
      const urgent = pools.get(key)?.urgent === true || ref.subresource !== "status";
      pools.set(key, { namespace: ref.namespace, name: ref.name, ...(urgent ? { urgent } : {}) });
    } else if (ours && ref.resource === RESOURCE.SANDBOX_TEMPLATES && ref.subresource !== "status")
      templates.add(ref.name);
    else if (
      !ref.apiGroup &&
      ref.resource === "secrets" &&
      ref.namespace &&
      ref.name.startsWith(IMAGE_PULL_SECRET_NAME_PREFIX)
    )
      envs.add(`${ref.namespace}/${ref.name.slice(IMAGE_PULL_SECRET_NAME_PREFIX.length)}`);
  }
  return { envs: [...envs], pools: [...pools.values()], templates: [...templates] };
}
