import { randomBytes } from "node:crypto";
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { inject } from "vitest";
import { nodeKubeTransport } from "../../../hosts/node/kube-transport.ts";
import { KubeClient } from "../../../lib/kube/client.ts";

/** nowhere is a kubeconfig for an apiserver that is not there (port 1 refuses connections). */
export function nowhere(): string {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc.exportConfig();
}

/** kube returns real clients for the run's control plane (no mocks anywhere in integration tests). */
export function kube() {
  const cluster = inject("cluster");
  const kc = new KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  return {
    cluster,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    crds: kc.makeApiClient(ApiextensionsV1Api),
  };
}

/**
 * newNamespace creates a uniquely named namespace for one test and waits for its default
 * service account (pods are refused before it exists). The returned cleanup deletes it.
 */
export async function newNamespace(
  core: CoreV1Api,
  prefix = "t",
): Promise<{ ns: string; cleanup: () => Promise<void> }> {
  const ns = `${prefix}-${randomBytes(4).toString("hex")}`;
  await core.createNamespace({ body: { metadata: { name: ns, labels: { "agentbox.test/ns": "true" } } } });
  await until(`default service account in ${ns}`, 30_000, async () => {
    await core.readNamespacedServiceAccount({ name: "default", namespace: ns });
    return true;
  });
  return {
    ns,
    cleanup: async () => {
      await core.deleteNamespace({ name: ns }).catch(() => {});
    },
  };
}

/** until polls check every 50 ms until it returns a truthy value or the deadline passes. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined | false>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`,
  );
}

/**
 * watchPodUntil watches one pod (no polling) and resolves with the first version for which
 * predicate holds; it rejects at the deadline with the last version seen.
 */
export function watchPodUntil(
  kc: KubeConfig,
  ns: string,
  name: string,
  what: string,
  predicate: (pod: V1Pod) => boolean,
  timeoutMs = 20_000,
): Promise<V1Pod> {
  return new Promise((resolve, reject) => {
    let last: V1Pod | undefined;
    let req: { abort: () => void } | undefined;
    const timer = setTimeout(() => {
      req?.abort();
      reject(
        new Error(
          `timed out after ${timeoutMs} ms waiting for pod ${ns}/${name}: ${what}; last status: ${JSON.stringify(last?.status)}`,
        ),
      );
    }, timeoutMs);
    new Watch(kc)
      .watch(
        `/api/v1/namespaces/${ns}/pods`,
        { fieldSelector: `metadata.name=${name}` },
        (_type, pod: V1Pod) => {
          last = pod;
          if (predicate(pod)) {
            clearTimeout(timer);
            req?.abort();
            resolve(pod);
          }
        },
        (err) => {
          if (err && err.name !== "AbortError") {
            clearTimeout(timer);
            reject(err);
          }
        },
      )
      .then((r) => {
        req = r;
      }, reject);
  });
}

/**
 * recordingClient is a client of the test apiserver that writes down each request it made, as
 * "METHOD path status" (the path without its query), into `requests`: a test can say which reads
 * a step made, against the real apiserver.
 */
export function recordingClient(requests: string[]): KubeClient {
  const inner = nodeKubeTransport(kube().kc);
  return new KubeClient(async (req) => {
    const res = await inner(req);
    requests.push(`${req.method} ${req.path.split("?")[0]} ${res.status}`);
    return res;
  });
}
