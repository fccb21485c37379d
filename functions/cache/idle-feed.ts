import type { V1Pod } from "@kubernetes/client-node";
import { pickIdle } from "../../lib/claims/candidates.ts";
import { homeDistance, ringPoint } from "../../lib/claims/claim-home.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { idleSelector } from "../../lib/pool/claim-shards.ts";
import { claimableState, podFacts } from "../../lib/pool/pod-facts.ts";
import { waitAtMost } from "../../lib/util/with-timeout.ts";
import type { CacheDeps } from "./cache-deps.ts";
import { Informer, type InformerDeps, WATCH_SECONDS } from "./informer.ts";

/** IdleFeedDeps: the client, a watch transport, a log, and the host's metrics when it keeps them. */
export type IdleFeedDeps = Pick<CacheDeps, "kube" | "watch" | "log"> & Pick<InformerDeps, "metrics">;

/** Feed is one pool's idle pods as its informer (one list and watch of them) last said. */
interface Feed {
  /**
   * idle holds the idle pods in a claimable state by name, with when a scale-down marked them (if
   * it did); whose they are is asked at take (pickIdle), against the pool the create read.
   */
  idle: Map<string, { pod: V1Pod; markedAt?: number; rank?: number }>;
  /** held names the pods one of this process's creates is claiming now. */
  held: Set<string>;
  usedAt: number;
  informer: Informer<V1Pod>;
}

/** IdleFeedOptions: how long a feed nobody asks for stays open (default 60 s), and the host's home. */
export interface IdleFeedOptions {
  lingerMs?: number;
  /**
   * home is this host's instance id: its creates take the idle pods nearest it on a ring of pod
   * names first (lib/claims/claim-home.ts), so hosts sharing a pool rarely race for one pod.
   * Unset: at random.
   */
  home?: string;
}

/**
 * FIRST_LIST_WAIT_MS bounds how long a create waits for a feed's first list (another create
 * opened it) before it lists candidates itself.
 */
export const FIRST_LIST_WAIT_MS = 1000;

/** KEPT_RANK ranks a pod whose claim was kept behind every pod at its distance from home (at most 2^31). */
const KEPT_RANK = 2 ** 32;

/** Settle ends a create's hold of a taken pod: it won the pod, lost it, or leaves it for others. */
export type Settle = (result: "won" | "lost" | "kept") => void;

/**
 * IdleFeed keeps, per pool a create asked for, what one list and watch of the pool's idle pods
 * say, so this process's creates take candidates from it instead of each listing the pool: in a
 * burst those lists were a quarter of the apiserver's CPU (the watch cache scans the namespace
 * for each). It hands each pod to one create of this process at a time, so they no longer race
 * each other for the same pods; it hands out the pods nearest the host's home first (IdleFeedOptions.home), so
 * hosts sharing the pool rarely race either. It is a hint, never the truth: every claim is still a patch
 * preconditioned on the version taken (another host may win it), a lost claim drops that version,
 * and a create answers "none" only from a consistent list (claimFrom). A feed closes when no
 * create asked for it for lingerMs. Each feed subscribes to an Informer of its own (which keeps no
 * store: the feed's idle pods are what take needs). See ADR 0024.
 */
export class IdleFeed {
  private readonly feeds = new Map<string, Feed>();
  private readonly deps: IdleFeedDeps;
  private readonly lingerMs: number;
  private readonly home: number | undefined;

  constructor(deps: IdleFeedDeps, options: IdleFeedOptions = {}) {
    this.deps = deps;
    this.lingerMs = options.lingerMs ?? 60_000;
    this.home = options.home === undefined ? undefined : ringPoint(options.home);
  }

  /**
   * ready says whether the pool's feed has listed its idle pods and follows them; the first ask
   * opens it (until then the create lists as before).
   */
  ready(namespace: string, pool: string): boolean {
    const open = this.feeds.get(`${namespace}/${pool}`);
    if (open) {
      open.usedAt = Date.now();
      return open.informer.synced;
    }
    this.open(namespace, pool);
    return false;
  }

  /**
   * settled is ready, except that a create finding the feed at its first list (another create
   * opened it) waits for that list, at most waitMs, instead of listing the pool itself: a burst's
   * creates then cost the pool one list, not one each. The create that opens a feed does not wait.
   */
  async settled(namespace: string, pool: string, waitMs = FIRST_LIST_WAIT_MS): Promise<boolean> {
    const feed = this.feeds.get(`${namespace}/${pool}`);
    if (!feed || feed.informer.synced) return this.ready(namespace, pool);
    feed.usedAt = Date.now();
    await waitAtMost(feed.informer.firstSync, waitMs);
    return feed.informer.synced;
  }

  /**
   * take hands one claimable idle pod the pool owns to the caller, held for it until `settle`:
   * unmarked pods before those marked for scale-down (claimable inside the protection window
   * only: the scale-down policy of `env`'s group when the pool is its member), at random within
   * each. Undefined when the feed has none to give.
   */
  take(
    pool: SandboxPool,
    now: Date,
    random: () => number,
    env?: SandboxEnv,
  ): { pod: V1Pod; settle: Settle } | undefined {
    const feed = this.feeds.get(`${pool.metadata?.namespace ?? ""}/${pool.metadata?.name ?? ""}`);
    if (!feed?.informer.synced) return undefined;
    const name = pickIdle(pool, feed.idle, feed.held, now.getTime(), env, random);
    const entry = name === undefined ? undefined : feed.idle.get(name);
    if (name === undefined || !entry) return undefined;
    feed.held.add(name);
    return {
      pod: entry.pod,
      settle: (result) => {
        feed.held.delete(name);
        // Won: no longer idle. Lost: that version is gone (a newer one the watch reported stays).
        if (result !== "kept" && feed.idle.get(name)?.pod === entry.pod) feed.idle.delete(name);
        // Kept (its claim failed, say): that version goes behind every other, so the host's next
        // creates do not all try it first; a newer version is ranked afresh.
        else if (result === "kept" && entry.rank !== undefined && feed.idle.get(name) === entry)
          entry.rank = Math.max(entry.rank, KEPT_RANK);
      },
    };
  }

  /** close stops every feed (the host is shutting down). */
  close(): void {
    for (const feed of this.feeds.values()) feed.informer.close();
    this.feeds.clear();
  }

  /** feedCount is the number of feeds open now (for tests). */
  get feedCount(): number {
    return this.feeds.size;
  }

  /** put files a reported pod: claimable ones (take applies the scale-down window), else none. */
  private put(idle: Feed["idle"], pod: V1Pod): void {
    const name = pod.metadata?.name ?? "";
    if (!claimableState(pod)) {
      idle.delete(name);
      return;
    }
    const facts = podFacts(pod);
    const rank = this.home === undefined ? {} : { rank: homeDistance(name, this.home) };
    // A mark that cannot be parsed never leads to a delete: such a pod stays claimable, as a marked one.
    idle.set(
      name,
      facts.scaleDownMark === undefined
        ? { pod, ...rank }
        : { pod, markedAt: facts.scaleDownMarkedAt?.getTime() ?? Number.MAX_SAFE_INTEGER, ...rank },
    );
  }

  /**
   * open starts a pool's feed: an informer of its idle pods (listed from the watch cache) whose
   * watches are short enough that a feed nobody asks for closes soon after its linger; it then
   * leaves the feeds. A 410 Gone stops the feed offering what the watch said until it has listed
   * again (the informer is out of step); a failed watch resumes.
   */
  private open(namespace: string, pool: string): void {
    const key = `${namespace}/${pool}`;
    const selector = idleSelector(pool);
    const state = { idle: new Map() as Feed["idle"], held: new Set<string>(), usedAt: Date.now() };
    const informer = new Informer<V1Pod>(
      this.deps,
      {
        name: "idle feed",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        selector: { labelSelector: selector },
        list: (page) => this.deps.kube.listPods(namespace, selector, { ...page, cached: true }),
        timeoutSeconds: Math.min(WATCH_SECONDS, Math.ceil(this.lingerMs / 1000)),
      },
      {
        keep: false,
        reopen: () => {
          if (Date.now() - state.usedAt <= this.lingerMs) return true;
          if (this.feeds.get(key) === state) this.feeds.delete(key);
          return false;
        },
      },
    );
    const feed: Feed = Object.assign(state, { informer });
    informer.subscribe({
      listed: (pods) => {
        const fresh: Feed["idle"] = new Map();
        for (const pod of pods) this.put(fresh, pod);
        feed.idle = fresh;
      },
      // A claimed pod leaves by name: its event is never parsed (most of an extra host's share).
      // One whose event cannot be read leaves too: the feed no longer knows its state.
      changed: (change) => {
        if (change.deleted) feed.idle.delete(change.name);
        else
          try {
            this.put(feed.idle, change.object);
          } catch (e) {
            feed.idle.delete(change.name);
            this.deps.log.warn({ pod: change.name, err: String(e) }, "idle feed got an event it cannot read");
          }
      },
    });
    this.feeds.set(key, feed);
  }
}
