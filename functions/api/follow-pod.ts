import type { V1Pod } from "@kubernetes/client-node";
import { orMissing } from "../../lib/kube/errors.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import type { ApiDeps } from "./deps.ts";
import { IDLE_WATCH_SECONDS } from "./idle-dispatch.ts";

/**
 * Seen takes each newer version of a followed pod (undefined: the pod is gone) and returns true
 * once it needs no more.
 */
export type Seen = (pod: V1Pod | undefined) => boolean;

/** QUICK_END_MS: a watch that ends sooner than this is paced before it is opened again. */
const QUICK_END_MS = 1000;

/** pause waits ms, or less when signal aborts first. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * followPod hands `seen` each version of one pod after `from` (no polling) until seen says done
 * or signal aborts, through the host's shared watch of the pod's pool when it has one (ADR 0023),
 * else through a watch of its own (the Worker, one request per isolate).
 */
export function followPod(
  deps: Pick<ApiDeps, "kube" | "watch" | "log" | "pods">,
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
  deps: Pick<ApiDeps, "kube" | "watch" | "log">,
  from: V1Pod,
  seen: Seen,
  signal: AbortSignal,
): Promise<void> {
  const namespace = from.metadata?.namespace ?? "";
  const name = from.metadata?.name ?? "";
  // The version the next watch resumes from: the last event's, bookmarks included.
  let resumeFrom = from.metadata?.resourceVersion;
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
      resumeFrom = read.pod.metadata?.resourceVersion;
    }
    let done = false;
    const opened = Date.now();
    const failed = await deps
      .watch(
        {
          method: "GET",
          path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
          query: {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion: resumeFrom,
            allowWatchBookmarks: "true",
            // Renewed now and then, like the idle watch: a dead stream is noticed and reopened.
            timeoutSeconds: String(IDLE_WATCH_SECONDS),
          },
        },
        (event) => {
          if (event.type === "ERROR") {
            reread = true;
            return true;
          }
          const pod = event.object as V1Pod;
          resumeFrom = pod.metadata?.resourceVersion ?? resumeFrom;
          if (event.type === "BOOKMARK") return false;
          done = seen(event.type === "DELETED" ? undefined : pod);
          return done;
        },
        signal,
      )
      .then(
        () => false,
        (e: unknown) => {
          deps.log.debug(
            { pod: `${namespace}/${name}`, err: String(e) },
            "waiter's watch failed; reading again",
          );
          return true;
        },
      );
    if (done || signal.aborted) return;
    // A watch that failed, or ended at once, is opened again after a pause that grows while they
    // keep doing so, never in a tight loop; a failed one starts over from a read.
    if (failed) reread = true;
    quick = Date.now() - opened < QUICK_END_MS ? quick + 1 : 0;
    if (quick > 0) await pause(retryDelay(quick - 1), signal);
  }
}
