// The router's view of where sandboxes run: one list-then-watch of every pod carrying a sandbox id
// (or one namespace's, for a namespace-scoped host), never a read per request. What it holds is a
// hint like every watch-fed view, but a conservative one: only Running sandboxes with a pod IP
// have a route (podRoute), keyed by sandbox id, so a pod IP that moves to another sandbox is never
// reached through an old one's route; a sandbox released on this host is forgotten at once and
// never routed again (ids are never reused), even if an older watch event still shows it Running.
import type { V1Pod } from "@kubernetes/client-node";
import { paceReopen, pause, watchPodsFrom } from "../../../functions/views/pod-watch.ts";
import type { ViewDeps } from "../../../functions/views/view-deps.ts";
import { SANDBOX_ID_LABEL } from "../../../lib/api/keys.ts";
import { type PodRoute, podRoute } from "../../../lib/data-plane/pod-route.ts";
import { retryDelay } from "../../../lib/util/backoff.ts";
import { withTimeout } from "../../../lib/util/with-timeout.ts";

/** LIST_PAGE: pods per page of the (re)list that starts the watch. */
const LIST_PAGE = 500;

/** FORGOTTEN_KEEP_MS: how long a forgotten id stays refused after the watch last mentioned it. */
const FORGOTTEN_KEEP_MS = 10 * 60_000;

/** LOOKUP_MS bounds the read a miss makes; MISS_KEEP_MS: how long a miss is answered from memory. */
const LOOKUP_MS = 3_000;
const MISS_KEEP_MS = 1_000;

/** MAX_LOOKUPS: misses read at once; more are answered as misses (the apiserver is not a cache). */
const MAX_LOOKUPS = 8;

/** RouteTableOptions scope the watch. */
export interface RouteTableOptions {
  /** namespace limits the watch to one namespace (a namespace-scoped host); all when unset. */
  namespace?: string;
  /** onDrop hears every route that goes (released, stopped, deleted, relabelled, forgotten). */
  onDrop?: (sandboxId: string) => void;
}

/**
 * RouteTable maps sandbox id → PodRoute from one watch. `route` answers from memory; `synced`
 * resolves once the first list is in; `forget` drops a sandbox this host released.
 */
export class RouteTable {
  private readonly routes = new Map<string, PodRoute>();
  /** byPod: which sandbox each pod (by uid) routes to, so a relabelled pod drops its old id. */
  private readonly byPod = new Map<string, string>();
  /** forgotten ids, with when they were forgotten or last seen: never routed again. */
  private readonly forgotten = new Map<string, number>();
  /** versions: the newest resourceVersion applied per pod uid (a read may run ahead of the watch). */
  private readonly versions = new Map<string, number>();
  /** lookups under way by sandbox id, and recent misses (until when they are answered from memory). */
  private readonly lookups = new Map<string, Promise<PodRoute | undefined>>();
  private readonly misses = new Map<string, number>();
  private readonly controller = new AbortController();
  private readonly cursor: { resumeFrom?: string | undefined } = {};
  private markSynced: () => void = () => {};
  /** synced resolves once the first list has been read (requests before it wait for it). */
  readonly synced = new Promise<void>((resolve) => {
    this.markSynced = resolve;
  });
  private isSynced = false;

  private readonly deps: Pick<ViewDeps, "kube" | "watch" | "log">;
  private readonly options: RouteTableOptions;

  constructor(deps: Pick<ViewDeps, "kube" | "watch" | "log">, options: RouteTableOptions = {}) {
    this.deps = deps;
    this.options = options;
  }

  /** start lists and watches in the background until close. */
  start(): void {
    this.run().catch((e: unknown) =>
      this.deps.log.error({ err: String(e) }, "data plane route watch stopped"),
    );
  }

  /** close stops the watch and drops every route. */
  close(): void {
    this.controller.abort();
    for (const id of [...this.routes.keys()]) this.drop(id);
  }

  /** ready: the first list is in. */
  get ready(): boolean {
    return this.isSynced;
  }

  /** size is the number of routes held (tests, metrics). */
  get size(): number {
    return this.routes.size;
  }

  /** route is a sandbox's route, or undefined: unknown, not Running, released, forgotten. */
  route(sandboxId: string): PodRoute | undefined {
    return this.routes.get(sandboxId);
  }

  /** all are the routes held now. */
  all(): IterableIterator<PodRoute> {
    return this.routes.values();
  }

  /**
   * lookup is a sandbox's route, reading its pod (one consistent read) when the table has none: a
   * sandbox answered Running a moment ago may not have reached this watch yet (or this host's, when
   * another host answered the create). Misses are remembered for MISS_KEEP_MS, reads shared per id
   * and at most MAX_LOOKUPS at once, so unknown ids cost the apiserver little; a forgotten
   * (released) id is never read. A failed read is a miss.
   */
  async lookup(sandboxId: string): Promise<PodRoute | undefined> {
    const known = this.routes.get(sandboxId);
    if (known || this.forgotten.has(sandboxId) || (this.misses.get(sandboxId) ?? 0) > Date.now())
      return known;
    const under = this.lookups.get(sandboxId);
    if (under) return under;
    if (this.lookups.size >= MAX_LOOKUPS) return undefined;
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
      for (const pod of list.items) this.apply(pod, false);
    } catch (e) {
      this.deps.log.debug({ err: String(e), sandboxId }, "data plane: a missed sandbox's read failed");
    }
    const route = this.routes.get(sandboxId);
    if (!route) {
      for (const [id, until] of this.misses) if (until <= Date.now()) this.misses.delete(id);
      this.misses.set(sandboxId, Date.now() + MISS_KEEP_MS);
    }
    return route;
  }

  /** forget drops a sandbox's route at once and refuses it from now on (this host released it). */
  forget(sandboxId: string): void {
    this.forgotten.set(sandboxId, Date.now());
    this.drop(sandboxId);
  }

  private drop(sandboxId: string): void {
    const had = this.routes.get(sandboxId);
    if (!had) return;
    this.routes.delete(sandboxId);
    if (this.byPod.get(had.podUid) === sandboxId) this.byPod.delete(had.podUid);
    this.options.onDrop?.(sandboxId);
  }

  /** apply takes one pod version (deleted: gone or out of the selection). */
  private apply(pod: V1Pod, deleted: boolean): void {
    const uid = pod.metadata?.uid ?? "";
    // A lookup's read may be newer than what the watch brings next: an older version is ignored.
    const version = Number(pod.metadata?.resourceVersion);
    const applied = this.versions.get(uid);
    if (Number.isSafeInteger(version) && applied !== undefined && version < applied) return;
    if (deleted) this.versions.delete(uid);
    else if (Number.isSafeInteger(version)) this.versions.set(uid, version);
    const next = deleted ? undefined : podRoute(pod);
    const before = this.byPod.get(uid);
    if (before !== undefined && before !== next?.sandboxId) this.drop(before);
    const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
    if (!next) {
      if (id !== undefined) this.drop(id);
      return;
    }
    if (this.forgotten.has(next.sandboxId)) {
      this.forgotten.set(next.sandboxId, Date.now());
      return;
    }
    const had = this.routes.get(next.sandboxId);
    // Another pod or address for the same id (never expected): its connections go with the old one.
    if (had && (had.podUid !== next.podUid || had.podIP !== next.podIP)) this.drop(next.sandboxId);
    this.routes.set(next.sandboxId, next);
    this.byPod.set(uid, next.sandboxId);
  }

  /** relist reads every selected pod (paged) and replaces the table with what it says. */
  private async relist(): Promise<void> {
    const seen = new Set<string>();
    const pods = new Set<string>();
    let page: { continue?: string } = {};
    let version = "";
    do {
      const list = await this.deps.kube.listPods(this.options.namespace, SANDBOX_ID_LABEL, {
        limit: LIST_PAGE,
        ...page,
      });
      version = list.resourceVersion;
      for (const pod of list.items) {
        this.apply(pod, false);
        pods.add(pod.metadata?.uid ?? "");
        const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
        if (id) seen.add(id);
      }
      page = list.continue ? { continue: list.continue } : {};
    } while (page.continue);
    for (const id of [...this.routes.keys()]) if (!seen.has(id)) this.drop(id);
    for (const uid of [...this.versions.keys()]) if (!pods.has(uid)) this.versions.delete(uid);
    this.cursor.resumeFrom = version;
    this.expireForgotten();
    if (!this.isSynced) {
      this.isSynced = true;
      this.markSynced();
    }
  }

  /** expireForgotten lets go of ids the watch has not mentioned for FORGOTTEN_KEEP_MS. */
  private expireForgotten(): void {
    const now = Date.now();
    for (const [id, at] of this.forgotten) if (now - at > FORGOTTEN_KEEP_MS) this.forgotten.delete(id);
  }

  /** run lists, then watches from the list's version; a 410 lists again; quick ends are paced. */
  private async run(): Promise<void> {
    const { signal } = this.controller;
    let quick = 0;
    let listed = false;
    while (!signal.aborted) {
      if (!listed) {
        try {
          await this.relist();
          listed = true;
        } catch (e) {
          this.deps.log.warn({ err: String(e) }, "data plane route list failed; retrying");
          await pause(retryDelay(quick++), signal);
          continue;
        }
      }
      const opened = Date.now();
      const end = await watchPodsFrom(
        this.deps,
        {
          namespace: this.options.namespace,
          selector: { labelSelector: SANDBOX_ID_LABEL },
          cursor: this.cursor,
        },
        ({ pod, deleted }) => {
          this.apply(pod, deleted);
          return false;
        },
        signal,
        "data plane route watch failed; resuming",
      );
      if (signal.aborted) return;
      if (end === "gone") listed = false;
      this.expireForgotten();
      quick = await paceReopen(quick, opened, end === "failed", signal);
    }
  }
}
