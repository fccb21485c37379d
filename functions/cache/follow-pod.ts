import type { V1Pod } from "@kubernetes/client-node";
import { orMissing } from "../../lib/kube/errors.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import type { ViewDeps } from "./cache-deps.ts";
import { paceReopen, pause, watchPodsFrom } from "./pod-watch.ts";

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
  deps: Pick<ViewDeps, "kube" | "watch" | "log" | "pods">,
  from: V1Pod,
  seen: Seen,
  signal: AbortSignal,
): Promise<void> {
  return deps.pods ? deps.pods.follow(from, seen, signal) : watchOnePod(deps, from, seen, signal);
}

/**
 * watchOnePod follows one pod on a watch of its own, resumed from the last version seen when the
 * apiserver ends it; when the watch cannot go on from there (410 Gone) or fails, it starts over
 * from a read. A read that fails too (an outage) is tried again after a growing pause.
 */
export async function watchOnePod(
  deps: Pick<ViewDeps, "kube" | "watch" | "log">,
  from: V1Pod,
  seen: Seen,
  signal: AbortSignal,
): Promise<void> {
  const namespace = from.metadata?.namespace ?? "";
  const name = from.metadata?.name ?? "";
  // The version the next watch resumes from: the last event's, bookmarks included.
  const cursor = { resumeFrom: from.metadata?.resourceVersion };
  let reread = false;
  let quick = 0;
  while (!signal.aborted) {
    if (reread) {
      const read = await orMissing<V1Pod>(deps.kube.getPod(namespace, name)).then(
        (pod) => ({ ok: true as const, pod }),
        (err: unknown) => ({ ok: false as const, err }),
      );
      if (!read.ok) {
        deps.log.debug(
          { pod: `${namespace}/${name}`, err: String(read.err) },
          "waiter could not read its pod",
        );
        await pause(retryDelay(quick++), signal);
        continue;
      }
      reread = false;
      if (seen(read.pod) || !read.pod) return;
      cursor.resumeFrom = read.pod.metadata?.resourceVersion;
    }
    const opened = Date.now();
    const end = await watchPodsFrom(
      deps,
      { namespace, selector: { fieldSelector: `metadata.name=${name}` }, cursor },
      ({ pod, deleted }) => seen(deleted ? undefined : pod),
      signal,
      "waiter's watch failed; reading again",
    );
    if (end === "stopped" || signal.aborted) return;
    // A watch that cannot go on from its version (410 Gone), or failed, starts over from a read;
    // any that failed or ended at once is paced first.
    if (end === "gone" || end === "failed") reread = true;
    quick = await paceReopen(quick, opened, end === "failed", signal);
  }
}
