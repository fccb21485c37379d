import type { V1Pod } from "@kubernetes/client-node";
import { orMissing } from "../../lib/kube/errors.ts";
import type { CacheDeps } from "./cache-deps.ts";
import { Informer } from "./informer.ts";

/**
 * Seen takes each newer version of a followed pod (undefined: the pod is gone) and returns true
 * once it needs no more.
 */
export type Seen = (pod: V1Pod | undefined) => boolean;

/**
 * followPod hands `seen` each version of one pod after `from` (no polling) until seen says done
 * or signal aborts, through the host's shared watch of the pod's pool when it has one (ADR 0023),
 * else through a watch of its own (the Worker, one request per isolate).
 */
export function followPod(
  deps: Pick<CacheDeps, "kube" | "watch" | "log" | "metrics" | "pods">,
  from: V1Pod,
  seen: Seen,
  signal: AbortSignal,
): Promise<void> {
  return deps.pods ? deps.pods.follow(from, seen, signal) : watchOnePod(deps, from, seen, signal);
}

/**
 * watchOnePod follows one pod on a watch of its own (an informer of that one pod, from `from`'s
 * version), resumed from the last version seen when the apiserver ends it; when the watch cannot
 * go on from there (410 Gone) or fails, it starts over from a read of the pod, which is the
 * informer's list: seen is handed what it says (undefined: gone, which ends the follow) and the
 * watch resumes from its version. A read that fails too (an outage) is tried again after a
 * growing pause.
 */
export function watchOnePod(
  deps: Pick<CacheDeps, "kube" | "watch" | "log" | "metrics">,
  from: V1Pod,
  seen: Seen,
  signal: AbortSignal,
): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  const namespace = from.metadata?.namespace ?? "";
  const name = from.metadata?.name ?? "";
  const informer = new Informer<V1Pod>(
    { watch: deps.watch, log: deps.log, metrics: deps.metrics },
    {
      name: "followed pod",
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
      selector: { fieldSelector: `metadata.name=${name}` },
      list: async () => {
        const pod = await orMissing<V1Pod>(deps.kube.getPod(namespace, name));
        return { items: pod ? [pod] : [], resourceVersion: pod?.metadata?.resourceVersion ?? "" };
      },
    },
    { from: from.metadata?.resourceVersion, keep: false, relistAfterFailure: true },
  );
  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      done = true;
      unsubscribe();
      informer.close();
      signal.removeEventListener("abort", finish);
      resolve();
    };
    const unsubscribe = informer.subscribe({
      changed: (change) => {
        if (!done && seen(change.deleted ? undefined : change.object)) finish();
      },
      // A pod the read no longer finds stays gone for this sandbox.
      listed: ([pod]) => {
        if (!done && (seen(pod) || !pod)) finish();
      },
    });
    signal.addEventListener("abort", finish, { once: true });
  });
}
