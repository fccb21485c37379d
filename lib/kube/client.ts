import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxSnapshot } from "../crd/sandbox-snapshot.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { CoreApi } from "./core-api.ts";
import type { JsonPatchOp } from "./json-patch.ts";
import type { ObjectList, Preconditions } from "./kube-base.ts";
import { getFreshness, listFreshness, type ReadOptions } from "./read-options.ts";

export type { EventIntent, SecretObject } from "./core-api.ts";
export type { JsonPatchOp } from "./json-patch.ts";
export type { ObjectList, Preconditions } from "./kube-base.ts";
export type { ReadOptions } from "./read-options.ts";

const POOLS = "/apis/agents.navix.sh/v1alpha1";
const enc = encodeURIComponent;
/** snapshots is the path of a namespace's SandboxSnapshots, or of one of them. */
const snapshots = (namespace: string, name?: string) =>
  `${POOLS}/namespaces/${enc(namespace)}/sandboxsnapshots${name ? `/${enc(name)}` : ""}`;
/** netpol is the path of a namespace's NetworkPolicies, or of one of them. */
const netpol = (namespace: string, name?: string) =>
  `/apis/networking.k8s.io/v1/namespaces/${enc(namespace)}/networkpolicies${name ? `/${enc(name)}` : ""}`;

/**
 * KubeClient is the small, typed slice of the Kubernetes API the reconcile steps use: the core
 * objects (CoreApi) and our kinds. Every call is one request, reads go to the API server (no
 * client cache; see ReadOptions for the apiserver's own), and every failure is a KubeError.
 */
export class KubeClient extends CoreApi {
  getPool(namespace: string, name: string, opts?: ReadOptions): Promise<SandboxPool> {
    return this.call(
      {
        method: "GET",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}`,
        query: getFreshness(opts),
      },
      `get pool ${namespace}/${name}`,
    );
  }

  /** listPools lists pools in one namespace, or in all namespaces when namespace is undefined. */
  listPools(namespace?: string, opts?: ReadOptions): Promise<ObjectList<SandboxPool>> {
    const path = namespace ? `${POOLS}/namespaces/${enc(namespace)}/sandboxpools` : `${POOLS}/sandboxpools`;
    return this.list(path, listFreshness(opts), "list pools");
  }

  /** createPool creates a SandboxPool; AlreadyExists when one of its name is there. */
  createPool(namespace: string, pool: SandboxPool): Promise<SandboxPool> {
    return this.call(
      { method: "POST", path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools`, body: pool },
      `create pool ${namespace}/${pool.metadata?.name}`,
    );
  }

  patchPool(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxPool> {
    return this.jsonPatch(
      `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}`,
      ops,
      `patch pool ${namespace}/${name}`,
    );
  }

  /** deletePool deletes only the pool it decided on (uid and resourceVersion preconditions). */
  deletePool(namespace: string, name: string, preconditions: Preconditions): Promise<void> {
    return this.deleteExactly(
      `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}`,
      preconditions,
      `delete pool ${namespace}/${name}`,
    );
  }

  /**
   * setPoolAnnotations merge-patches a pool's annotations (null removes a key): no read, no
   * precondition, and no effect on keys it does not name, for annotations each writer owns alone.
   */
  setPoolAnnotations(
    namespace: string,
    name: string,
    annotations: Record<string, string | null>,
  ): Promise<SandboxPool> {
    return this.call(
      {
        method: "PATCH",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}`,
        body: { metadata: { annotations } },
        contentType: "application/merge-patch+json",
      },
      `annotate pool ${namespace}/${name}`,
    );
  }

  /** patchPoolStatusOps JSON-patches a pool's status subresource (callers put their tests first). */
  patchPoolStatusOps(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxPool> {
    return this.jsonPatch(
      `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}/status`,
      ops,
      `patch pool status ${namespace}/${name}`,
    );
  }

  /** patchPoolStatus merge-patches the status subresource (only the fields given change). */
  patchPoolStatus(namespace: string, name: string, status: Record<string, unknown>): Promise<SandboxPool> {
    return this.call(
      {
        method: "PATCH",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}/status`,
        body: { status },
        contentType: "application/merge-patch+json",
      },
      `patch pool status ${namespace}/${name}`,
    );
  }

  /** getTemplate reads a cluster-scoped SandboxTemplate. */
  getTemplate(name: string, opts?: ReadOptions): Promise<SandboxTemplate> {
    return this.call(
      { method: "GET", path: `${POOLS}/sandboxtemplates/${enc(name)}`, query: getFreshness(opts) },
      `get template ${name}`,
    );
  }

  /** listTemplates lists the cluster's SandboxTemplates. */
  listTemplates(opts?: ReadOptions): Promise<ObjectList<SandboxTemplate>> {
    return this.list(`${POOLS}/sandboxtemplates`, listFreshness(opts), "list templates");
  }

  /** patchTemplateStatus JSON-patches a template's status subresource (callers test its resourceVersion). */
  patchTemplateStatus(name: string, ops: JsonPatchOp[]): Promise<SandboxTemplate> {
    return this.jsonPatch(
      `${POOLS}/sandboxtemplates/${enc(name)}/status`,
      ops,
      `patch template status ${name}`,
    );
  }

  /** listEnvs lists SandboxEnvs in one namespace, or in all namespaces when namespace is undefined. */
  listEnvs(namespace?: string, opts?: ReadOptions): Promise<ObjectList<SandboxEnv>> {
    const path = namespace ? `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs` : `${POOLS}/sandboxenvs`;
    return this.list(path, listFreshness(opts), "list envs");
  }

  getEnv(namespace: string, name: string, opts?: ReadOptions): Promise<SandboxEnv> {
    return this.call(
      {
        method: "GET",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs/${enc(name)}`,
        query: getFreshness(opts),
      },
      `get env ${namespace}/${name}`,
    );
  }

  /** createEnv creates a SandboxEnv; AlreadyExists when one of its name is there. */
  createEnv(namespace: string, env: SandboxEnv): Promise<SandboxEnv> {
    return this.call(
      { method: "POST", path: `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs`, body: env },
      `create env ${namespace}/${env.metadata?.name}`,
    );
  }

  /** patchEnv JSON-patches an Env (callers test its resourceVersion). */
  patchEnv(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxEnv> {
    return this.jsonPatch(
      `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs/${enc(name)}`,
      ops,
      `patch env ${namespace}/${name}`,
    );
  }

  /** patchEnvStatus JSON-patches an Env's status subresource (callers test its resourceVersion). */
  patchEnvStatus(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxEnv> {
    return this.jsonPatch(
      `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs/${enc(name)}/status`,
      ops,
      `patch env status ${namespace}/${name}`,
    );
  }

  // NetworkPolicies: a sandbox's own egress rules (lib/egress), one per sandbox with a
  // deterministic name; plain JSON objects, as the apiserver spells them.

  /** getNetworkPolicy reads a NetworkPolicy (a quorum read: a 404 is the proof it is gone). */
  getNetworkPolicy<T = unknown>(namespace: string, name: string): Promise<T> {
    return this.call(
      { method: "GET", path: netpol(namespace, name) },
      `get networkpolicy ${namespace}/${name}`,
    );
  }

  /** listNetworkPolicies lists NetworkPolicies matching labelSelector, in one namespace or all. */
  listNetworkPolicies<T = unknown>(
    namespace: string | undefined,
    labelSelector: string,
  ): Promise<ObjectList<T>> {
    const path = namespace ? netpol(namespace) : "/apis/networking.k8s.io/v1/networkpolicies";
    return this.list(path, { labelSelector }, `list networkpolicies in ${namespace ?? "all namespaces"}`);
  }

  /** createNetworkPolicy creates one (409 when its name is taken). */
  createNetworkPolicy<T extends { metadata?: { name?: string } }>(namespace: string, policy: T): Promise<T> {
    return this.call(
      { method: "POST", path: netpol(namespace), body: policy },
      `create networkpolicy ${namespace}/${policy.metadata?.name}`,
    );
  }

  /** replaceNetworkPolicy PUTs one; its metadata.resourceVersion is the precondition (409 on a change). */
  replaceNetworkPolicy<T extends { metadata?: { name?: string } }>(namespace: string, policy: T): Promise<T> {
    const name = policy.metadata?.name ?? "";
    return this.call(
      { method: "PUT", path: netpol(namespace, name), body: policy },
      `replace networkpolicy ${namespace}/${name}`,
    );
  }

  /** deleteNetworkPolicy deletes one, only at the version decided on when preconditions say so. */
  deleteNetworkPolicy(namespace: string, name: string, preconditions: Preconditions = {}): Promise<void> {
    return this.deleteExactly(
      netpol(namespace, name),
      preconditions,
      `delete networkpolicy ${namespace}/${name}`,
    );
  }

  // SandboxSnapshots: paused sandboxes (ADR 0045), named after their sandbox id. Every write is
  // preconditioned by the object's resourceVersion (PUT), so racing pauses and resumes conflict.

  /** getSnapshot reads a SandboxSnapshot (a quorum read). */
  getSnapshot(namespace: string, name: string): Promise<SandboxSnapshot> {
    return this.call(
      { method: "GET", path: snapshots(namespace, name) },
      `get sandboxsnapshot ${namespace}/${name}`,
    );
  }

  /** listSnapshots lists SandboxSnapshots in one namespace or all, by label and field selectors. */
  listSnapshots(
    namespace: string | undefined,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<ObjectList<SandboxSnapshot>> {
    return this.list(
      namespace ? snapshots(namespace) : `${POOLS}/sandboxsnapshots`,
      selectors,
      `list sandboxsnapshots in ${namespace ?? "all namespaces"}`,
    );
  }

  /** createSnapshot creates one (409 AlreadyExists when its sandbox has one). */
  createSnapshot(namespace: string, snapshot: SandboxSnapshot): Promise<SandboxSnapshot> {
    return this.call(
      { method: "POST", path: snapshots(namespace), body: snapshot },
      `create sandboxsnapshot ${namespace}/${snapshot.metadata?.name}`,
    );
  }

  /** replaceSnapshot PUTs the object (spec, metadata); its resourceVersion is the precondition. */
  replaceSnapshot(namespace: string, snapshot: SandboxSnapshot): Promise<SandboxSnapshot> {
    const name = snapshot.metadata?.name ?? "";
    return this.call(
      { method: "PUT", path: snapshots(namespace, name), body: snapshot },
      `replace sandboxsnapshot ${namespace}/${name}`,
    );
  }

  /** replaceSnapshotStatus PUTs the status subresource; its resourceVersion is the precondition. */
  replaceSnapshotStatus(namespace: string, snapshot: SandboxSnapshot): Promise<SandboxSnapshot> {
    const name = snapshot.metadata?.name ?? "";
    return this.call(
      { method: "PUT", path: `${snapshots(namespace, name)}/status`, body: snapshot },
      `replace sandboxsnapshot status ${namespace}/${name}`,
    );
  }

  /**
   * patchSnapshotStatus merge-patches the status subresource, with no precondition: only for fields
   * that go one way once their fact holds (status.recorded.ended), so no newer write is undone.
   */
  patchSnapshotStatus(
    namespace: string,
    name: string,
    status: Record<string, unknown>,
  ): Promise<SandboxSnapshot> {
    return this.call(
      {
        method: "PATCH",
        path: `${snapshots(namespace, name)}/status`,
        body: { status },
        contentType: "application/merge-patch+json",
      },
      `patch sandboxsnapshot status ${namespace}/${name}`,
    );
  }

  /** deleteSnapshot deletes one, only at the version decided on when preconditions say so. */
  deleteSnapshot(namespace: string, name: string, preconditions: Preconditions = {}): Promise<void> {
    return this.deleteExactly(
      snapshots(namespace, name),
      preconditions,
      `delete sandboxsnapshot ${namespace}/${name}`,
    );
  }

  private jsonPatch<T>(path: string, ops: JsonPatchOp[], what: string): Promise<T> {
    return this.call({ method: "PATCH", path, body: ops, contentType: "application/json-patch+json" }, what);
  }
}
