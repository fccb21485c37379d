// The router's view of where sandboxes run: one informer (functions/cache/informer.ts) of every pod
// carrying a sandbox id (or one namespace's, for a namespace-scoped host), held in HeldRoutes. What
// it holds is a hint like every watch-fed view, but a conservative one: only Running sandboxes with
// a pod IP, in a pod a real pool controls, have a route, keyed by sandbox id (held-routes.ts says
// how). A route is used only while what the table knows of it is recent (routeTrusted): when the
// watch has been silent or failing longer than that, its pod is read again before use and dropped
// for good if it is gone, replaced or no longer that sandbox's. Misses (unknown ids) read the
// apiserver within a fixed budget per host (spendMiss), whatever clients send.
import type { V1Pod } from "@kubernetes/client-node";
import type { CacheDeps } from "../../../functions/cache/cache-deps.ts";
import { type Change, Informer, WATCH_SECONDS } from "../../../functions/cache/informer.ts";
import { SANDBOX_ID_LABEL } from "../../../lib/crd/keys.ts";
import { fullBudget, type MissBudget, spendMiss } from "../../../lib/data-plane/miss-budget.ts";
import type { PodRoute } from "../../../lib/data-plane/pod-route.ts";
import { recheckKeeps, routeTrusted } from "../../../lib/data-plane/route-freshness.ts";
import { orMissing } from "../../../lib/kube/errors.ts";
import type { Metrics } from "../../../lib/metrics/metrics.ts";
import { withTimeout } from "../../../lib/util/with-timeout.ts";
import { HeldRoutes } from "./held-routes.ts";
import { PoolOwners } from "./pool-owners.ts";

/** LOOKUP_MS bounds the read a miss or a re-check makes; MISS_KEEP_MS: a miss answered from memory. */
const LOOKUP_MS = 3_000;
const MISS_KEEP_MS = 1_000;

/** MAX_LOOKUPS: misses (and, apart, re-checks) read at once; more are answered without a read. */
const MAX_LOOKUPS = 8;

/**
 * EXPIRE_MS: forgotten ids are let go (HeldRoutes.expireForgotten) at most this often, as events
 * are heard: about once a watch, as when the table ran its own watch loop.
 */
const EXPIRE_MS = WATCH_SECONDS * 1000;

/** RouteTableDeps: the client and watch the routes are read with, a log, and the metrics when kept. */
export type RouteTableDeps = Pick<CacheDeps, "kube" | "watch" | "log"> & {
  metrics?: Pick<Metrics, "informers"> | undefined;
};

/** RouteTableOptions scope the watch. */
export interface RouteTableOptions {
  /** namespace limits the watch to one namespace (a namespace-scoped host); all when unset. */
  namespace?: string;
  /** onDrop hears every route that goes (released, stopped, deleted, relabelled, forgotten). */
  onDrop?: (sandboxId: string) => void;
  /** now is the clock (ms) the freshness and the miss budget are judged by; Date.now by default. */
  now?: () => number;
}

/**
 * RouteTable maps sandbox id → PodRoute from one informer. `route` answers from memory (a route
 * not recently confirmed is none); `lookup` reads what memory cannot answer; `synced` resolves
 * once the first list is in; `forget` drops a sandbox this host released.
 */
export class RouteTable {
  private readonly held: HeldRoutes;
  /** heardAt: the last list or watch event (bookmarks too): the table was current then (ms). */
  private heardAt = Number.NEGATIVE_INFINITY;
  /** expiredAt: when forgotten ids were last let go (ms). */
  private expiredAt = Number.NEGATIVE_INFINITY;
  /** lookups and re-checks under way by sandbox id, and recent misses (answered from memory until). */
  private readonly lookups = new Map<string, Promise<PodRoute | undefined>>();
  private readonly rechecks = new Map<string, Promise<PodRoute | undefined>>();
  private readonly misses = new Map<string, number>();
  private budget: MissBudget;
  /** informer lists and watches the pods from start until close. */
  private informer: Informer<V1Pod> | undefined;
  private closed = false;
  private markSynced: () => void = () => {};
  /** synced resolves once the first list has been read (requests before it wait for it). */
  readonly synced = new Promise<void>((resolve) => {
    this.markSynced = resolve;
  });
  private isSynced = false;

  private readonly deps: RouteTableDeps;
  private readonly options: RouteTableOptions;
  private readonly now: () => number;

  constructor(deps: RouteTableDeps, options: RouteTableOptions = {}) {
    this.deps = deps;
    this.options = options;
    this.now = options.now ?? Date.now;
    this.budget = fullBudget(this.now());
    this.held = new HeldRoutes(new PoolOwners(deps, this.now), this.now, options.onDrop);
  }

  /** start lists and watches in the background (an informer of the selected pods) until close. */
  start(): void {
    if (this.closed || this.informer) return;
    const { namespace } = this.options;
    const { kube, watch, log, metrics } = this.deps;
    this.informer = new Informer<V1Pod>(
      { watch, log, ...(metrics ? { metrics } : {}) },
      {
        name: "routes",
        path:
          namespace === undefined
            ? "/api/v1/pods"
            : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        selector: { labelSelector: SANDBOX_ID_LABEL },
        // A consistent list, as every read of the table's: a route comes from what the apiserver holds.
        list: (page) =>
          kube.listPods(namespace, SANDBOX_ID_LABEL, page).catch((e: unknown) => {
            log.warn({ err: String(e) }, "data plane route list failed; retrying");
            throw e;
          }),
      },
      { keep: false },
    );
    this.informer.subscribe({
      listed: (pods) => this.listed(pods),
      changed: (change) => this.changed(change),
      heard: () => this.heard(),
    });
  }

  /** close stops the watch and drops every route. */
  close(): void {
    this.closed = true;
    this.informer?.close();
    this.held.clear();
  }

  /** ready: the first list is in. */
  get ready(): boolean {
    return this.isSynced;
  }

  /** size is the number of routes held (tests, metrics). */
  get size(): number {
    return this.held.size;
  }

  /**
   * route is a sandbox's route, or undefined: unknown, not Running, released, forgotten, or not
   * confirmed recently enough to use without a read (lookup reads it).
   */
  route(sandboxId: string): PodRoute | undefined {
    const route = this.held.get(sandboxId);
    return route && this.trusted(sandboxId) ? route : undefined;
  }

  /** holds: a route is held for the sandbox, however long ago it was confirmed (bookkeeping, not routing). */
  holds(sandboxId: string): boolean {
    return this.held.get(sandboxId) !== undefined;
  }

  /** all are the routes held now. */
  all(): IterableIterator<PodRoute> {
    return this.held.values();
  }

  private trusted(sandboxId: string): boolean {
    return routeTrusted({ routeAt: this.held.confirmedAt(sandboxId), tableAt: this.heardAt }, this.now());
  }

  /**
   * lookup is a sandbox's route, reading what memory cannot answer. A route not confirmed lately
   * (the watch silent or failing) has its pod read again by name (recheck). A sandbox without one
   * has its pods read (one consistent read): a sandbox answered Running a moment ago may not have
   * reached this watch yet (or this host's, when another host answered the create). Misses are
   * remembered for MISS_KEEP_MS, reads shared per id, at most MAX_LOOKUPS at once and within the
   * miss budget (spendMiss), so unknown ids cost the apiserver little whatever clients send; a
   * forgotten (released) id is never read. A failed read is a miss.
   */
  async lookup(sandboxId: string): Promise<PodRoute | undefined> {
    const known = this.held.get(sandboxId);
    if (known) return this.trusted(sandboxId) ? known : this.recheck(sandboxId, known);
    if (this.held.isForgotten(sandboxId) || (this.misses.get(sandboxId) ?? 0) > this.now()) return undefined;
    const under = this.lookups.get(sandboxId);
    if (under) return under;
    if (this.lookups.size >= MAX_LOOKUPS) return undefined;
    const spent = spendMiss(this.budget, this.now());
    this.budget = spent.budget;
    if (!spent.ok) return undefined;
    const read = this.read(sandboxId).finally(() => this.lookups.delete(sandboxId));
    this.lookups.set(sandboxId, read);
    return read;
  }

  private async read(sandboxId: string): Promise<PodRoute | undefined> {
    try {
      const list = await withTimeout(
        this.deps.kube.listPods(this.options.namespace, `${SANDBOX_ID_LABEL}=${sandboxId}`),
        LOOKUP_MS,
        "a sandbox's pod read",
      );
      await this.held.checkOwners(list.items);
      for (const pod of list.items) this.held.apply(pod, false);
    } catch (e) {
      this.deps.log.debug({ err: String(e), sandboxId }, "data plane: a missed sandbox's read failed");
    }
    const route = this.route(sandboxId);
    if (!route) this.remember(sandboxId);
    return route;
  }

  /** recheck reads a route's pod again (shared per id, MAX_LOOKUPS at once) and says what holds. */
  private recheck(sandboxId: string, route: PodRoute): Promise<PodRoute | undefined> {
    if ((this.misses.get(sandboxId) ?? 0) > this.now()) return Promise.resolve(undefined);
    const under = this.rechecks.get(sandboxId);
    if (under) return under;
    if (this.rechecks.size >= MAX_LOOKUPS) return Promise.resolve(undefined);
    const read = this.reread(sandboxId, route).finally(() => this.rechecks.delete(sandboxId));
    this.rechecks.set(sandboxId, read);
    return read;
  }

  private async reread(sandboxId: string, route: PodRoute): Promise<PodRoute | undefined> {
    let pod: V1Pod | undefined;
    try {
      pod = await withTimeout(
        orMissing(this.deps.kube.getPod(route.namespace, route.podName)),
        LOOKUP_MS,
        "a route's pod read",
      );
    } catch (e) {
      // Not confirmed is not usable: the route stays, unused, until a read or the watch confirms it.
      this.deps.log.debug({ err: String(e), sandboxId }, "data plane: a route's re-check failed");
      this.remember(sandboxId);
      return undefined;
    }
    const keeps = recheckKeeps(route, pod);
    if (!keeps) {
      if (this.held.get(sandboxId)?.podUid === route.podUid) this.held.drop(sandboxId);
      if (pod?.metadata?.uid !== route.podUid) this.held.gone(route.podUid);
    }
    if (pod) this.held.apply(pod, false);
    if (keeps && this.held.get(sandboxId)?.podUid === route.podUid) this.held.confirm(sandboxId);
    return this.route(sandboxId);
  }

  /** remember answers a sandbox as missing from memory for MISS_KEEP_MS. */
  private remember(sandboxId: string): void {
    const now = this.now();
    for (const [id, until] of this.misses) if (until <= now) this.misses.delete(id);
    this.misses.set(sandboxId, now + MISS_KEEP_MS);
  }

  /** forget drops a sandbox's route at once and refuses it from now on (this host released it). */
  forget(sandboxId: string): void {
    this.held.forget(sandboxId);
  }

  /**
   * listed replaces the table with a full list: the pools the pods name are read first, then each
   * pod is applied and the routes of ids (and what is kept of pods) it did not see go.
   */
  private async listed(pods: readonly V1Pod[]): Promise<void> {
    await this.held.checkOwners(pods);
    if (this.closed) return;
    const seen = new Set<string>();
    const uids = new Set<string>();
    for (const pod of pods) {
      this.held.apply(pod, false);
      uids.add(pod.metadata?.uid ?? "");
      const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
      if (id) seen.add(id);
    }
    this.held.sweep(seen, uids);
    this.heardAt = this.now();
    this.expiredAt = this.heardAt;
    if (!this.isSynced) {
      this.isSynced = true;
      this.markSynced();
    }
  }

  /** changed applies one watch event's pod (deleted: gone, or out of the selection). */
  private changed(change: Change<V1Pod>): void {
    if (!this.closed) this.held.apply(change.object, change.deleted);
  }

  /**
   * heard notes each watch event (bookmarks too): the table is current now. Forgotten ids the
   * watch has not mentioned for long are let go here, at most every EXPIRE_MS.
   */
  private heard(): void {
    this.heardAt = this.now();
    if (this.heardAt - this.expiredAt < EXPIRE_MS) return;
    this.expiredAt = this.heardAt;
    this.held.expireForgotten();
  }
}
