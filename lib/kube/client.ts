import type { CoreV1Event, V1Pod } from "@kubernetes/client-node";
import type { SandboxEnv } from "../api/sandbox-env.ts";
import type { SandboxPool } from "../api/sandbox-pool.ts";
import type { SandboxTemplate } from "../api/sandbox-template.ts";
import { kubeErrorFrom } from "./errors.ts";
import type { JsonPatchOp } from "./json-patch.ts";

export type { JsonPatchOp } from "./json-patch.ts";

import { getFreshness, listFreshness, type ReadOptions } from "./read-options.ts";
import type { KubeRequest, KubeTransport } from "./transport.ts";

export type { ReadOptions } from "./read-options.ts";

/** SecretObject is the part of a v1 Secret we read and write. */
export interface SecretObject {
  apiVersion?: "v1";
  kind?: "Secret";
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

/** Preconditions make a delete apply only to the object version a step decided on. */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** ObjectList is a list response: the items and the list's resourceVersion. */
export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
  /** continue is the apiserver's token for the next page, when there is one. */
  continue?: string;
}

/** EventIntent is an events.k8s.io/v1 Event about one object, as the steps emit them. */
export interface EventIntent {
  type: "Normal" | "Warning";
  reason: string;
  note: string;
  action: string;
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string };
}

const POOLS = "/apis/agents.navix.sh/v1alpha1";
/** METADATA_LIST asks the apiserver for a list of metadata only (PartialObjectMetadataList). */
const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const enc = encodeURIComponent;

/**
 * KubeClient is the small, typed slice of the Kubernetes API the reconcile steps use. Every call
 * is one request, reads go to the API server (no client cache; see ReadOptions for the
 * apiserver's own), and every failure is a KubeError.
 */
export class KubeClient {
  private readonly transport: KubeTransport;
  /** requests counts calls by method, for benchmarks and the steps' own reports. */
  readonly requests = { GET: 0, POST: 0, PUT: 0, PATCH: 0, DELETE: 0 };

  constructor(transport: KubeTransport) {
    this.transport = transport;
  }

  private async call<T>(req: KubeRequest, what: string): Promise<T> {
    this.requests[req.method]++;
    const res = await this.transport(req);
    if (res.status < 200 || res.status >= 300) throw kubeErrorFrom(res.status, res.body, what);
    return (res.body ? JSON.parse(res.body) : undefined) as T;
  }

  /**
   * listPods lists pods matching labelSelector in one namespace, or in all when namespace is
   * undefined; `page` passes the apiserver's own pagination (limit/continue) through.
   */
  listPods(
    namespace: string | undefined,
    labelSelector: string,
    page: { limit?: number; continue?: string } & ReadOptions = {},
  ): Promise<ObjectList<V1Pod>> {
    const path = namespace ? `/api/v1/namespaces/${enc(namespace)}/pods` : "/api/v1/pods";
    const query = {
      labelSelector,
      limit: page.limit ? String(page.limit) : undefined,
      continue: page.continue,
      // A continued list carries its version in the token; the apiserver refuses another one.
      ...(page.continue ? {} : listFreshness(page)),
    };
    return this.list(path, query, `list pods in ${namespace ?? "all namespaces"}`);
  }

  /** listTemplates lists the cluster's SandboxTemplates. */
  listTemplates(opts?: ReadOptions): Promise<ObjectList<SandboxTemplate>> {
    return this.list(`${POOLS}/sandboxtemplates`, listFreshness(opts), "list templates");
  }

  getPod(namespace: string, name: string, opts?: ReadOptions): Promise<V1Pod> {
    return this.call(
      {
        method: "GET",
        path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`,
        query: getFreshness(opts),
      },
      `get pod ${namespace}/${name}`,
    );
  }

  createPod(namespace: string, pod: V1Pod): Promise<V1Pod> {
    return this.call(
      { method: "POST", path: `/api/v1/namespaces/${enc(namespace)}/pods`, body: pod },
      `create pod ${namespace}/${pod.metadata?.name}`,
    );
  }

  patchPod(namespace: string, name: string, ops: JsonPatchOp[]): Promise<V1Pod> {
    return this.call(
      {
        method: "PATCH",
        path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`,
        body: ops,
        contentType: "application/json-patch+json",
      },
      `patch pod ${namespace}/${name}`,
    );
  }

  /** deletePod deletes only the pod version it decided on (uid and resourceVersion preconditions). */
  deletePod(namespace: string, name: string, preconditions: Preconditions): Promise<void> {
    return this.deleteExactly(
      `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`,
      preconditions,
      `delete pod ${namespace}/${name}`,
    );
  }

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

  /** getTemplate reads a cluster-scoped SandboxTemplate. */
  getTemplate(name: string, opts?: ReadOptions): Promise<SandboxTemplate> {
    return this.call(
      { method: "GET", path: `${POOLS}/sandboxtemplates/${enc(name)}`, query: getFreshness(opts) },
      `get template ${name}`,
    );
  }

  /** getSecret reads a Secret (data values base64, as stored). */
  getSecret(namespace: string, name: string, opts?: ReadOptions): Promise<SecretObject> {
    return this.call(
      {
        method: "GET",
        path: `/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`,
        query: getFreshness(opts),
      },
      `get secret ${namespace}/${name}`,
    );
  }

  /** createSecret creates a Secret; AlreadyExists when it is there. */
  createSecret(namespace: string, secret: SecretObject): Promise<SecretObject> {
    return this.call(
      { method: "POST", path: `/api/v1/namespaces/${enc(namespace)}/secrets`, body: secret },
      `create secret ${namespace}`,
    );
  }

  /** patchSecret JSON-patches a Secret (callers test its resourceVersion). */
  patchSecret(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SecretObject> {
    return this.call(
      {
        method: "PATCH",
        path: `/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`,
        body: ops,
        contentType: "application/json-patch+json",
      },
      `patch secret ${namespace}/${name}`,
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

  /** patchEnvStatus JSON-patches an Env's status subresource (callers test its resourceVersion). */
  patchEnvStatus(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxEnv> {
    return this.call(
      {
        method: "PATCH",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxenvs/${enc(name)}/status`,
        body: ops,
        contentType: "application/json-patch+json",
      },
      `patch env status ${namespace}/${name}`,
    );
  }

  /** createPool creates a SandboxPool; AlreadyExists when one of its name is there. */
  createPool(namespace: string, pool: SandboxPool): Promise<SandboxPool> {
    return this.call(
      { method: "POST", path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools`, body: pool },
      `create pool ${namespace}/${pool.metadata?.name}`,
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
   * secretNames lists the "namespace/name" of the Secrets of one type, in one namespace or all,
   * optionally only the one of a given name, as metadata only: the Secrets' data never leaves the
   * apiserver.
   */
  async secretNames(namespace: string | undefined, type: string, name?: string): Promise<string[]> {
    const path = namespace ? `/api/v1/namespaces/${enc(namespace)}/secrets` : "/api/v1/secrets";
    const fieldSelector = `type=${type}${name ? `,metadata.name=${name}` : ""}`;
    const list = await this.call<{ items?: { metadata?: { namespace?: string; name?: string } }[] }>(
      { method: "GET", path, query: { fieldSelector }, accept: METADATA_LIST },
      `list ${type} secret names`,
    );
    return (list.items ?? []).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);
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

  patchPool(namespace: string, name: string, ops: JsonPatchOp[]): Promise<SandboxPool> {
    return this.call(
      {
        method: "PATCH",
        path: `${POOLS}/namespaces/${enc(namespace)}/sandboxpools/${enc(name)}`,
        body: ops,
        contentType: "application/json-patch+json",
      },
      `patch pool ${namespace}/${name}`,
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

  /** listEvents lists core/v1 Events of a namespace matching a field selector. */
  listEvents(namespace: string, fieldSelector: string): Promise<ObjectList<CoreV1Event>> {
    return this.list(
      `/api/v1/namespaces/${enc(namespace)}/events`,
      { fieldSelector },
      `list events in ${namespace}`,
    );
  }

  /** createEvent records an events.k8s.io/v1 Event; reportingController names us. */
  async createEvent(
    e: EventIntent,
    now: Date,
    reportingController: string,
    reportingInstance: string,
  ): Promise<void> {
    await this.call(
      {
        method: "POST",
        path: `/apis/events.k8s.io/v1/namespaces/${enc(e.regarding.namespace)}/events`,
        body: {
          apiVersion: "events.k8s.io/v1",
          kind: "Event",
          // Named like client-go's recorder (<object>.<time in hex>), plus a random suffix.
          metadata: {
            name: `${e.regarding.name}.${now.getTime().toString(16)}${crypto.randomUUID().slice(0, 8)}`,
          },
          eventTime: now.toISOString().replace("Z", "000Z"),
          type: e.type,
          reason: e.reason,
          note: e.note.slice(0, 1024),
          action: e.action,
          regarding: e.regarding,
          reportingController,
          reportingInstance,
        },
      },
      `create event for ${e.regarding.namespace}/${e.regarding.name}`,
    );
  }

  /** deleteExactly deletes an object only if it still is the version decided on (DeleteOptions). */
  private async deleteExactly(path: string, preconditions: Preconditions, what: string): Promise<void> {
    await this.call(
      { method: "DELETE", path, body: { apiVersion: "v1", kind: "DeleteOptions", preconditions } },
      what,
    );
  }

  private async list<T>(
    path: string,
    query: Record<string, string | undefined>,
    what: string,
  ): Promise<ObjectList<T>> {
    const res = await this.call<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
      { method: "GET", path, query },
      what,
    );
    return {
      items: res.items ?? [],
      resourceVersion: res.metadata?.resourceVersion ?? "",
      ...(res.metadata?.continue ? { continue: res.metadata.continue } : {}),
    };
  }
}
