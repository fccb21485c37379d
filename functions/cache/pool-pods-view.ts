import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { reachedVersion, resourceVersionOf } from "../../lib/kube/resource-version.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import type { ViewDeps } from "./cache-deps.ts";
import { type PodChange, paceReopen, pause, watchPodsFrom } from "./pod-watch.ts";

/** LIST_PAGE is the page size of the view's list of every pool pod. */
const LIST_PAGE = 500;

/**
 * PoolPodsView keeps every pool pod (label SANDBOX_POOL_LABEL) of one namespace, or of the
 * cluster, as one list and watch of them last said, so a host's tick plans from it instead of
 * listing every pod each period. With several hosts each tick's list of every pod (serialised by
 * the apiserver, parsed by the host) was most of what a host cost at rest, and it grew with hosts
 * × pods; the watch costs nothing while the pods do not change. It is a hint, as the tick's list
 * was (that snapshot was up to a fifth of a period old when a pool's run began): every write is
 * preconditioned on what the apiserver holds. `snapshot` is undefined while the view is not in
 * step (its first list, a 410 Gone, a failed watch: it lists again), and the tick then lists.
 * A changed pod's event is kept unparsed until a tick reads the view: in a burst each pod changes
 * three or four times between two ticks, and every host decodes every pool pod event, so parsing
 * each was most of what an extra host cost. See ADR 0035 and 0038.
 */
export class PoolPodsView {
  /** pools holds the pods by "namespace/pool" (their pool label), each by name. */
  private pools = new Map<string, Map<string, V1Pod>>();
  /** changed holds the last change of each pod since the view was last read, by "namespace/name". */
  private changed = new Map<string, PodChange>();
  private synced = false;
  /** relist: a read found an event it cannot parse; the watch stops at its next event and the view lists. */
  private relist = false;
  /** cursor: the version the next watch resumes from (the last event's, bookmarks included). */
  private readonly cursor: { resumeFrom?: string } = {};
  /** waiters are the caughtUp calls still waiting, each with the version it waits for. */
  private readonly waiters = new Map<(passed: boolean) => void, string>();
  private readonly controller = new AbortController();
  private readonly deps: Pick<ViewDeps, "kube" | "watch" | "log">;
  private readonly namespace: string | undefined;

  constructor(deps: Pick<ViewDeps, "kube" | "watch" | "log">, namespace?: string) {
    this.deps = deps;
    this.namespace = namespace;
    this.run().catch((e: unknown) => this.deps.log.warn({ err: String(e) }, "pool pods view stopped"));
  }

  /** snapshot is every pool pod the view holds, or undefined while it is not in step. */
  snapshot(): V1Pod[] | undefined {
    return this.read() ? [...this.pools.values()].flatMap((pods) => [...pods.values()]) : undefined;
  }

  /**
   * podsOf is the pods labelled with one pool as the view holds them now (a tick takes them when
   * the pool's run starts, not when the tick began), or undefined while it is not in step.
   */
  podsOf(namespace: string, pool: string): V1Pod[] | undefined {
    return this.read() ? [...(this.pools.get(`${namespace}/${pool}`)?.values() ?? [])] : undefined;
  }

  /**
   * caughtUp resolves true once the view's watch has passed `version` (reachedVersion: at once if
   * it has), or false after withinMs, for a version that cannot be ordered, or when the view
   * closes. A pool run an audit event triggered waits on it for the version the event reported,
   * so it plans on a view that holds that write (ADR 0039): under load the audit batch can arrive
   * before the watch event, a few hundred writes ahead.
   */
  caughtUp(version: string, withinMs: number): Promise<boolean> {
    if (reachedVersion(this.cursor.resumeFrom, version)) return Promise.resolve(true);
    if (resourceVersionOf(version) === undefined || this.controller.signal.aborted)
      return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = (passed: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        resolve(passed);
      };
      const timer = setTimeout(() => waiter(false), withinMs);
      this.waiters.set(waiter, version);
    });
  }

  /** passed settles the caughtUp waiters whose version the watch has now reached. */
  private passed(): void {
    for (const [waiter, version] of this.waiters)
      if (reachedVersion(this.cursor.resumeFrom, version)) waiter(true);
  }

  /**
   * read files the pods changed since the view was last read under their pools (parsing each
   * once) and answers whether the view is in step. A change whose line is not JSON puts the view
   * out of step (the tick lists) until it has listed again.
   */
  private read(): boolean {
    if (!this.synced) return false;
    try {
      for (const change of this.changed.values()) put(this.pools, change.pod);
    } catch (e) {
      this.deps.log.warn({ err: String(e) }, "pool pods view got an event it cannot read; listing again");
      this.synced = false;
      this.relist = true;
    }
    this.changed.clear();
    return this.synced;
  }

  /** close stops the view's watch (the host is shutting down); no caughtUp waits on. */
  close(): void {
    this.synced = false;
    this.controller.abort();
    for (const waiter of this.waiters.keys()) waiter(false);
  }

  /** list reads every pool pod (from the watch cache, page by page) and marks the view in step. */
  private async list(): Promise<void> {
    const fresh = new Map<string, Map<string, V1Pod>>();
    let next: string | undefined;
    let version = "";
    do {
      const page = await this.deps.kube.listPods(this.namespace, SANDBOX_POOL_LABEL, {
        limit: LIST_PAGE,
        cached: true,
        ...(next ? { continue: next } : {}),
      });
      for (const pod of page.items) put(fresh, pod);
      version ||= page.resourceVersion;
      next = page.continue;
    } while (next);
    this.pools = fresh;
    this.changed.clear();
    this.relist = false;
    this.cursor.resumeFrom = version;
    this.synced = true;
    this.passed();
  }

  /** run lists, then watches from that list's version; a 410 or a failed watch lists again. */
  private async run(): Promise<void> {
    const { signal } = this.controller;
    let quick = 0;
    while (!signal.aborted) {
      try {
        if (!this.synced) await this.list();
      } catch (e) {
        this.deps.log.debug({ err: String(e) }, "pool pods view could not list; trying again");
        await pause(retryDelay(quick++), signal);
        continue;
      }
      const opened = Date.now();
      const end = await watchPodsFrom(
        this.deps,
        {
          namespace: this.namespace,
          selector: { labelSelector: SANDBOX_POOL_LABEL },
          cursor: this.cursor,
          onGone: () => {
            this.synced = false;
          },
        },
        (change) => {
          const key = `${change.namespace}/${change.name}`;
          this.changed.delete(key);
          if (change.deleted) drop(this.pools, change.namespace, change.name);
          else this.changed.set(key, change);
          if (this.waiters.size > 0) this.passed();
          // An unreadable event seen by a read: stop here and list again.
          return this.relist;
        },
        signal,
        "pool pods view's watch failed; listing again",
      );
      // A failed watch may have been down for a while: the tick lists until the view is in step.
      if (end === "failed") this.synced = false;
      quick = await paceReopen(quick, opened, end === "failed", signal);
    }
  }
}

/** poolOf is the "namespace/pool" a pod's pool label names. */
const poolOf = (pod: V1Pod) =>
  `${pod.metadata?.namespace ?? ""}/${pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? ""}`;

/**
 * drop removes a pod from every pool it is held under (by name and namespace: its pool label may
 * have changed since the view last saw it).
 */
function drop(pools: Map<string, Map<string, V1Pod>>, namespace: string, name: string): void {
  for (const [key, pods] of pools) {
    if (!key.startsWith(`${namespace}/`) || !pods.delete(name)) continue;
    if (pods.size === 0) pools.delete(key);
  }
}

/** put files a pod under its pool (and under no other). */
function put(pools: Map<string, Map<string, V1Pod>>, pod: V1Pod): void {
  const key = poolOf(pod);
  const pods = pools.get(key);
  if (pods?.has(pod.metadata?.name ?? "")) {
    pods.set(pod.metadata?.name ?? "", pod);
    return;
  }
  drop(pools, pod.metadata?.namespace ?? "", pod.metadata?.name ?? "");
  pools.set(key, (pools.get(key) ?? new Map()).set(pod.metadata?.name ?? "", pod));
}
