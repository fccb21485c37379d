import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { CacheDeps } from "./cache-deps.ts";
import { type Change, Informer, type InformerDeps } from "./informer.ts";

/** PoolPodsViewDeps: the client, a watch transport, a log, and the host's metrics when it keeps them. */
export type PoolPodsViewDeps = Pick<CacheDeps, "kube" | "watch" | "log"> & Pick<InformerDeps, "metrics">;

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
 * each was most of what an extra host cost. It subscribes to an Informer (which keeps no store of
 * its own: the view's index by pool is what its reads need). See ADR 0035 and 0038.
 */
export class PoolPodsView {
  /** pools holds the pods by "namespace/pool" (their pool label), each by name. */
  private pools = new Map<string, Map<string, V1Pod>>();
  /** changed holds the last change of each pod since the view was last read, by "namespace/name". */
  private readonly changed = new Map<string, Change<V1Pod>>();
  private readonly informer: Informer<V1Pod>;

  constructor(deps: PoolPodsViewDeps, namespace?: string) {
    this.informer = new Informer<V1Pod>(
      deps,
      {
        name: "pool pods",
        path:
          namespace === undefined
            ? "/api/v1/pods"
            : `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        selector: { labelSelector: SANDBOX_POOL_LABEL },
        list: (page) => deps.kube.listPods(namespace, SANDBOX_POOL_LABEL, { ...page, cached: true }),
      },
      // A failed watch may have been down for a while: the tick lists until the view is in step.
      { relistAfterFailure: true, keep: false },
    );
    this.informer.subscribe({
      listed: (pods) => {
        const fresh = new Map<string, Map<string, V1Pod>>();
        for (const pod of pods) put(fresh, pod);
        this.pools = fresh;
        this.changed.clear();
      },
      changed: (change) => {
        const key = `${change.namespace}/${change.name}`;
        this.changed.delete(key);
        if (change.deleted) drop(this.pools, change.namespace, change.name);
        else this.changed.set(key, change);
      },
    });
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
    return this.informer.caughtUp(version, withinMs);
  }

  /** close stops the view's watch (the host is shutting down); no caughtUp waits on. */
  close(): void {
    this.informer.close();
  }

  /**
   * read files the pods changed since the view was last read under their pools (parsing each
   * once) and answers whether the view is in step. A change whose line is not JSON puts the view
   * out of step (the tick lists) until the informer has listed again.
   */
  private read(): boolean {
    if (!this.informer.synced) return false;
    try {
      for (const change of this.changed.values()) put(this.pools, change.object);
    } catch (e) {
      this.informer.relist(`pool pods view got an event it cannot read: ${String(e)}`);
    }
    this.changed.clear();
    return this.informer.synced;
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
