// The core/v1 slice of the API the steps and the sandbox API use: pods, Secrets (the API keys,
// and pull Secret names as metadata only), Events and one ConfigMap (the instance type catalog).
import type { CoreV1Event, V1Node, V1Pod } from "@kubernetes/client-node";
import type { JsonPatchOp } from "./json-patch.ts";
import { KubeBase, type ObjectList, type Preconditions } from "./kube-base.ts";
import { getFreshness, listFreshness, type ReadOptions } from "./read-options.ts";

/** SecretObject is the part of a v1 Secret we read and write. */
export interface SecretObject {
  apiVersion?: "v1";
  kind?: "Secret";
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  type?: string;
  data?: Record<string, string>;
}

/** ConfigMapObject is the part of a v1 ConfigMap we read. */
export interface ConfigMapObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

/** EventIntent is an events.k8s.io/v1 Event about one object, as the steps emit them. */
export interface EventIntent {
  type: "Normal" | "Warning";
  reason: string;
  note: string;
  action: string;
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string };
}

/** METADATA_LIST asks the apiserver for a list of metadata only (PartialObjectMetadataList). */
const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const enc = encodeURIComponent;

/** CoreApi is the core/v1 part of KubeClient. */
export class CoreApi extends KubeBase {
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

  /**
   * readPodLog reads a container's log (`pods/log`), text as the kubelet serves it; `query` holds
   * its options as strings (container, timestamps, sinceTime, tailLines, limitBytes).
   */
  readPodLog(namespace: string, name: string, query: Record<string, string | undefined>): Promise<string> {
    return this.callText(
      {
        method: "GET",
        path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}/log`,
        query,
        // The apiserver negotiates a serializer for its errors: text/plain alone is a 406.
        accept: "application/json, */*",
      },
      `read the log of pod ${namespace}/${name}`,
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

  /** getConfigMap reads a ConfigMap (the instance type catalog). */
  getConfigMap(namespace: string, name: string, opts?: ReadOptions): Promise<ConfigMapObject> {
    return this.call(
      {
        method: "GET",
        path: `/api/v1/namespaces/${enc(namespace)}/configmaps/${enc(name)}`,
        query: getFreshness(opts),
      },
      `get configmap ${namespace}/${name}`,
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

  /**
   * secretNames lists the "namespace/name" of the Secrets of one type, in one namespace or all,
   * optionally only the one of a given name, as metadata only: the Secrets' data never leaves the
   * apiserver.
   */
  async secretNames(namespace: string | undefined, type: string, name?: string): Promise<string[]> {
    const path = namespace ? `/api/v1/namespaces/${enc(namespace)}/secrets` : "/api/v1/secrets";
    const fieldSelector = `type=${type}${name ? `,metadata.name=${name}` : ""}`;
    const list = await this.call<{ items?: { metadata?: { namespace?: string; name?: string } }[] }>(
      { method: "GET", path, query: { fieldSelector }, accept: METADATA_LIST, list: true },
      `list ${type} secret names`,
    );
    return (list.items ?? []).map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`);
  }

  /** getNode reads a Node (its allocatable resources and annotations). */
  getNode(name: string, opts?: ReadOptions): Promise<V1Node> {
    return this.call(
      { method: "GET", path: `/api/v1/nodes/${enc(name)}`, query: getFreshness(opts) },
      `get node ${name}`,
    );
  }

  /**
   * nodeProxy GETs `path` on a node through the apiserver's node proxy (`nodes/proxy`), e.g. the
   * kubelet's `stats/summary`, and answers the body as text. `node` may name a scheme and port
   * (`http:kwok-node-0:10247`), as the proxy's path allows; `path`'s slashes are kept.
   *
   * Both may come from a Node's annotation (which its kubelet may write), and the request goes
   * out with this client's identity, so neither may leave `/api/v1/nodes/<node>/proxy/`: a `..`
   * or `.` segment (URL parsing resolves them, encoded or not), an empty one, and any `%`, `?`,
   * `#` or `\` (which a URL parser or the apiserver may decode, cut or turn into `/`) is refused
   * with a RangeError before any request, never cleaned up into something else.
   */
  nodeProxy(node: string, path: string, accept = "application/json"): Promise<string> {
    if (!/^(?:https?:)?[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?(?::\d{1,5})?$/.test(node))
      return Promise.reject(new RangeError(`node proxy: ${JSON.stringify(node)} is not a node name`));
    const segments = path.split("/");
    if (segments.some((s) => s === "" || s === "." || s === ".." || /[%?#\\]/.test(s)))
      return Promise.reject(
        new RangeError(`node proxy: ${JSON.stringify(path)} has an empty or dot segment, or %, ?, # or \\`),
      );
    const name = enc(node).replaceAll("%3A", ":");
    const rest = segments.map(enc).join("/");
    return this.callText(
      { method: "GET", path: `/api/v1/nodes/${name}/proxy/${rest}`, accept },
      `get ${path} of node ${node} through the node proxy`,
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
}
