// What an Informer's sources, subscribers and callers see (functions/cache/informer.ts runs the loop).
import type { ObjectList } from "../../lib/kube/kube-base.ts";
import type { KubeWatchTransport, WatchEvent } from "../../lib/kube/transport.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import type { Log } from "../../lib/util/log.ts";

/**
 * Change is one object's event as an informer hands it on: who it is and its version, read from
 * the line's start, and the object itself, parsed when first read (a line that is not JSON
 * throws then). A subscriber that needs only the name of an object that left, or only the last
 * of several versions, never parses the others: with several hosts each decodes every pool pod
 * event, so this is most of what an extra host costs.
 */
export interface Change<T> {
  /** deleted: the object is gone, or no longer selected. */
  deleted: boolean;
  namespace: string;
  name: string;
  version: string;
  readonly object: T;
}

/** ListPage reads one page of the selection (the informer passes the apiserver's limit/continue through). */
export type ListPage<T> = (page: { limit: number; continue?: string }) => Promise<ObjectList<T>>;

/** InformerSource is what an informer lists and watches. */
export interface InformerSource<T> {
  /** name labels the informer's logs and metrics ("pool pods", "routes", ...). */
  name: string;
  /** path is the collection's path (e.g. /api/v1/namespaces/ns/pods). */
  path: string;
  selector: { labelSelector: string } | { fieldSelector: string };
  /** list reads the selection; an informer with `replay` never lists. */
  list?: ListPage<T>;
  /** timeoutSeconds ends each watch (WATCH_SECONDS by default). */
  timeoutSeconds?: number;
}

/** InformerOptions choose how an informer starts and what it does when it loses its place. */
export interface InformerOptions {
  /**
   * from starts the watch at this version with no list (a create following its own claim): the
   * first list comes only after a 410 Gone, and then `onlyVersion` says whether it is whole.
   */
  from?: string;
  /**
   * onlyVersion: a list (after a 410) reads just where to start over (one item), not the whole
   * selection; subscribers hear `outOfStep("gone")` and read what they need themselves.
   */
  onlyVersion?: boolean;
  /**
   * replay opens every watch with no version, so the apiserver sends every selected object as
   * ADDED first (a list inside the watch), and never lists apart: subscribers hear an empty
   * `listed` before each watch, to forget what the last one said. For a short-lived cache whose
   * selection is small (a create's wait for idle pods), where a separate list costs more.
   */
  replay?: boolean;
  /** relistAfterFailure: a failed watch lists again instead of resuming (it may have been down a while). */
  relistAfterFailure?: boolean;
  /** keep holds each object's last change, so a subscriber that comes late is handed them (default true). */
  keep?: boolean;
  /** reopen is asked before each watch is opened: false closes the informer (one nobody uses). */
  reopen?: () => boolean;
}

/**
 * Subscriber hears an informer. `listed` replaces everything the subscriber held (the informer
 * listed, or the subscriber came after it had); `changed` is one event after that; `outOfStep`
 * says the informer lost its place (a 410 Gone, or a failed watch with relistAfterFailure) and
 * what it holds may be stale until the next `listed`; `heard` is every event, bookmarks included.
 */
export interface Subscriber<T> {
  listed?(objects: readonly T[], version: string): void | Promise<void>;
  changed(change: Change<T>): void;
  outOfStep?(why: "gone" | "failed"): void;
  heard?(): void;
}

/** InformerDeps: the watch transport, a log, and the host's metrics when it keeps them. */
export interface InformerDeps {
  watch: KubeWatchTransport;
  log: Log;
  metrics?: Pick<Metrics, "informers">;
}

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

/** changeOf is a watch event's change, its object read from the event when first asked for. */
export function changeOf<T>(event: WatchEvent): Change<T> {
  const meta =
    event.meta ??
    (event.object as { metadata?: { name?: string; namespace?: string; resourceVersion?: string } }).metadata;
  return {
    deleted: event.type === "DELETED",
    namespace: meta?.namespace ?? "",
    name: meta?.name ?? "",
    version: meta?.resourceVersion ?? "",
    get object() {
      return event.object as T;
    },
  };
}

/** keyOf is a change's "namespace/name". */
export const keyOf = (c: { namespace: string; name: string }) => `${c.namespace}/${c.name}`;
