import type { V1Pod } from "@kubernetes/client-node";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import type { ViewDeps } from "./cache-deps.ts";

/** IDLE_WATCH_SECONDS is how long one pod watch lasts before it is reopened (timeoutSeconds). */
export const IDLE_WATCH_SECONDS = 120;

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
 * paceReopen is what a watch loop does between two watches: a watch that failed or ended within
 * QUICK_END_MS counts one more quick end and waits a pause that grows with them (never a tight
 * loop); one that lasted resets the count. It resolves with the new count.
 */
export async function paceReopen(
  quick: number,
  openedAt: number,
  failed: boolean,
  signal: AbortSignal,
): Promise<number> {
  const next = failed || Date.now() - openedAt < QUICK_END_MS ? quick + 1 : 0;
  if (next > 0) await pause(retryDelay(next - 1), signal);
  return next;
}

/** podChange is a watch event's pod change, its pod read from the event when first asked for. */
function podChange(event: WatchEvent, meta: { name?: string; namespace?: string } | undefined): PodChange {
  return {
    deleted: event.type === "DELETED",
    namespace: meta?.namespace ?? "",
    name: meta?.name ?? "",
    get pod() {
      return event.object as V1Pod;
    },
  };
}

/** PodWatch is one watch of a namespace's pods: by label or field selector, resumed from a version. */
export interface PodWatch {
  /** namespace whose pods are watched; undefined: every namespace (the data plane's route table). */
  namespace: string | undefined;
  selector: { labelSelector: string } | { fieldSelector: string };
  /** resumeFrom is advanced to each event's version, bookmarks included. */
  cursor: { resumeFrom?: string | undefined };
  timeoutSeconds?: number;
  /** onGone runs the moment the apiserver says it cannot go on (before the watch has closed). */
  onGone?: () => void;
}

/**
 * PodChange is one pod event of a watch: whether the pod is gone (or out of the selection), whose
 * it is, and the pod itself, parsed when first read (watchLines): a view that needs only the name
 * of a pod that left, or only the last of several versions, never parses the others.
 */
export interface PodChange {
  deleted: boolean;
  namespace: string;
  name: string;
  readonly pod: V1Pod;
}

/** WatchEnd is how one watch ended: onPod stopped it, 410 Gone, a failed request, or the apiserver closed it. */
export type WatchEnd = "stopped" | "gone" | "failed" | "ended";

/**
 * watchPodsFrom runs one watch of pods from the cursor's version (bookmarks asked for, renewed by
 * the apiserver after timeoutSeconds, IDLE_WATCH_SECONDS by default). onPod sees each pod
 * (deleted: gone, or out of the selection) and returns true to stop. A watch the apiserver cannot
 * continue from that version (an ERROR event, e.g. 410 Gone) ends "gone"; a failed request is
 * logged with `what` and ends "failed".
 */
export async function watchPodsFrom(
  deps: Pick<ViewDeps, "watch" | "log">,
  watch: PodWatch,
  onPod: (change: PodChange) => boolean,
  signal: AbortSignal,
  what: string,
): Promise<WatchEnd> {
  let end: WatchEnd = "ended";
  await deps
    .watch(
      {
        method: "GET",
        path:
          watch.namespace === undefined
            ? "/api/v1/pods"
            : `/api/v1/namespaces/${encodeURIComponent(watch.namespace)}/pods`,
        query: {
          ...watch.selector,
          resourceVersion: watch.cursor.resumeFrom,
          allowWatchBookmarks: "true",
          timeoutSeconds: String(watch.timeoutSeconds ?? IDLE_WATCH_SECONDS),
        },
      },
      (event) => {
        if (event.type === "ERROR") {
          end = "gone";
          watch.onGone?.();
          return true;
        }
        const meta = event.meta ?? (event.object as V1Pod).metadata;
        watch.cursor.resumeFrom = meta?.resourceVersion ?? watch.cursor.resumeFrom;
        if (event.type === "BOOKMARK" || !onPod(podChange(event, meta))) return false;
        end = "stopped";
        return true;
      },
      signal,
    )
    .catch((e: unknown) => {
      if (!signal.aborted) deps.log.debug({ watch: watch.selector, err: String(e) }, what);
      end = "failed";
    });
  return end;
}
