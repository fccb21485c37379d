// What the router's route table believes, built from pod versions (its watch's, its list's and
// its reads'): sandbox id → PodRoute, and when each route was last confirmed. A pod routes only
// when its pool is known to be real (PoolOwners): one whose pool has not been read yet waits for
// that read, one whose pool is not there never routes. Versions are applied in order per pod, a
// pod a read found gone or replaced is never brought back by an older event, and a sandbox this
// host released is never routed again (ids are never reused). An id two pods claim at once is
// routed to neither: a pool's uid can be copied by whoever may create pods in its namespace, and
// the last event applied must not decide who gets a sandbox's traffic and token.
import type { V1Pod } from "@kubernetes/client-node";
import { type PodRoute, podRoute } from "../../../lib/data-plane/pod-route.ts";
import { ownerKey, type RouteOwner, routeOwnerOf } from "../../../lib/data-plane/route-owner.ts";
import type { PoolOwners } from "./pool-owners.ts";

/** FORGOTTEN_KEEP_MS: how long a forgotten id stays refused after the watch last mentioned it. */
const FORGOTTEN_KEEP_MS = 10 * 60_000;

/** GONE is the version kept for a pod a read found gone or replaced: no older event brings it back. */
const GONE = Number.MAX_SAFE_INTEGER;

/** HeldRoutes holds the routes pod versions give, and when each was last confirmed. */
export class HeldRoutes {
  private readonly routes = new Map<string, PodRoute>();
  /** confirmed: when each route's pod was last reported by the watch or read (ms). */
  private readonly confirmed = new Map<string, number>();
  /** byPod: which sandbox each pod (by uid) routes to, so a relabelled pod drops its old id. */
  private readonly byPod = new Map<string, string>();
  /** pending: pods that would route once their pool is read (by uid, the newest version). */
  private readonly pending = new Map<string, V1Pod>();
  /** forgotten ids, with when they were forgotten or last seen: never routed again. */
  private readonly forgotten = new Map<string, number>();
  /** claims: the sandbox id each pod (by uid) would route, and the pods claiming each id. */
  private readonly claims = new Map<string, string>();
  private readonly claimants = new Map<string, Set<string>>();
  /** versions: the newest resourceVersion applied per pod uid (a read may run ahead of the watch). */
  private readonly versions = new Map<string, number>();
  private readonly owners: PoolOwners;
  private readonly now: () => number;
  private readonly onDrop: ((sandboxId: string) => void) | undefined;

  constructor(owners: PoolOwners, now: () => number, onDrop?: (sandboxId: string) => void) {
    this.owners = owners;
    this.now = now;
    this.onDrop = onDrop;
  }

  /** get is the route held for a sandbox, however old. */
  get(sandboxId: string): PodRoute | undefined {
    return this.routes.get(sandboxId);
  }

  /** confirmedAt is when a held route was last confirmed (ms; -Infinity when none is held). */
  confirmedAt(sandboxId: string): number {
    return this.confirmed.get(sandboxId) ?? Number.NEGATIVE_INFINITY;
  }

  /** confirm notes that a read has just confirmed a held route. */
  confirm(sandboxId: string): void {
    if (this.routes.has(sandboxId)) this.confirmed.set(sandboxId, this.now());
  }

  /** values, ids and size are the routes held. */
  values(): IterableIterator<PodRoute> {
    return this.routes.values();
  }
  ids(): string[] {
    return [...this.routes.keys()];
  }
  get size(): number {
    return this.routes.size;
  }

  /** isForgotten: this host released the sandbox. */
  isForgotten(sandboxId: string): boolean {
    return this.forgotten.has(sandboxId);
  }

  /** forget drops a sandbox's route at once and refuses it from now on (this host released it). */
  forget(sandboxId: string): void {
    this.forgotten.set(sandboxId, this.now());
    this.drop(sandboxId);
  }

  /** drop lets a sandbox's route go (onDrop hears it). */
  drop(sandboxId: string): void {
    const had = this.routes.get(sandboxId);
    if (!had) return;
    this.routes.delete(sandboxId);
    this.confirmed.delete(sandboxId);
    if (this.byPod.get(had.podUid) === sandboxId) this.byPod.delete(had.podUid);
    this.onDrop?.(sandboxId);
  }

  /** gone notes that a read found a pod gone or replaced: none of its versions applies again. */
  gone(podUid: string): void {
    this.versions.set(podUid, GONE);
    this.pending.delete(podUid);
    this.unclaim(podUid);
  }

  /** contested: more than one pod claims the sandbox id; none of them is routed. */
  contested(sandboxId: string): boolean {
    return (this.claimants.get(sandboxId)?.size ?? 0) > 1;
  }

  /** claim records that pod `uid` would route `sandboxId` (and no other id). */
  private claim(uid: string, sandboxId: string): void {
    if (this.claims.get(uid) === sandboxId) return;
    this.unclaim(uid);
    this.claims.set(uid, sandboxId);
    let pods = this.claimants.get(sandboxId);
    if (!pods) {
      pods = new Set();
      this.claimants.set(sandboxId, pods);
    }
    pods.add(uid);
  }

  /** unclaim forgets what pod `uid` claimed. */
  private unclaim(uid: string): void {
    const id = this.claims.get(uid);
    if (id === undefined) return;
    this.claims.delete(uid);
    const pods = this.claimants.get(id);
    pods?.delete(uid);
    if (pods?.size === 0) this.claimants.delete(id);
  }

  /** clear drops every route (the table closes). */
  clear(): void {
    this.pending.clear();
    for (const id of this.ids()) this.drop(id);
  }

  /**
   * sweep ends a full list: routes of ids it did not see go, and what is kept per pod goes for pods
   * it did not see; forgotten ids the watch has not mentioned for FORGOTTEN_KEEP_MS are let go.
   */
  sweep(seenIds: ReadonlySet<string>, seenPods: ReadonlySet<string>): void {
    for (const id of this.ids()) if (!seenIds.has(id)) this.drop(id);
    for (const uid of [...this.versions.keys()]) if (!seenPods.has(uid)) this.versions.delete(uid);
    for (const uid of [...this.pending.keys()]) if (!seenPods.has(uid)) this.pending.delete(uid);
    for (const uid of [...this.claims.keys()]) if (!seenPods.has(uid)) this.unclaim(uid);
    this.expireForgotten();
  }

  /** expireForgotten lets go of ids the watch has not mentioned for FORGOTTEN_KEEP_MS. */
  expireForgotten(): void {
    const now = this.now();
    for (const [id, at] of this.forgotten) if (now - at > FORGOTTEN_KEEP_MS) this.forgotten.delete(id);
  }

  /** checkOwners reads, before pods are applied, the pools they name that have not been read. */
  async checkOwners(pods: readonly V1Pod[]): Promise<void> {
    const owners = new Map<string, RouteOwner>();
    for (const pod of pods) {
      const owner = podRoute(pod) && routeOwnerOf(pod);
      if (owner && this.owners.known(owner) === undefined) owners.set(ownerKey(owner), owner);
    }
    await Promise.all([...owners.values()].map((o) => this.owners.check(o)));
  }

  /** verify reads an owner's pool, then applies again the pods that waited for it (when it could). */
  private verify(owner: RouteOwner): void {
    const key = ownerKey(owner);
    void this.owners.check(owner).then((owned) => {
      if (owned === undefined) return;
      for (const pod of [...this.pending.values()]) {
        const o = routeOwnerOf(pod);
        if (o && ownerKey(o) === key) this.apply(pod, false);
      }
    });
  }

  /**
   * apply takes one pod version (deleted: gone or out of the selection). Its pool must be known
   * real for it to route (pending until read); a route held already stays while its pool is read
   * again. A pod without a route drops only the route it held itself: a pod labelled with another
   * sandbox's id never touches that sandbox's route.
   */
  apply(pod: V1Pod, deleted: boolean): void {
    const uid = pod.metadata?.uid ?? "";
    // A lookup's read may be newer than what the watch brings next: an older version is ignored.
    const version = Number(pod.metadata?.resourceVersion);
    const applied = this.versions.get(uid);
    if (Number.isSafeInteger(version) && applied !== undefined && version < applied) return;
    if (deleted) this.versions.delete(uid);
    else if (Number.isSafeInteger(version)) this.versions.set(uid, version);
    this.pending.delete(uid);
    let next = deleted ? undefined : podRoute(pod);
    const owner = next && routeOwnerOf(pod);
    const owned = owner ? this.owners.known(owner) : undefined;
    if (owner && owned !== true) {
      if (owned === undefined) {
        this.pending.set(uid, pod);
        this.verify(owner);
      }
      if (owned === false || this.routes.get(next?.sandboxId ?? "")?.podUid !== uid) next = undefined;
    }
    const before = this.byPod.get(uid);
    if (before !== undefined && before !== next?.sandboxId) this.drop(before);
    if (next) this.claim(uid, next.sandboxId);
    else this.unclaim(uid);
    if (!next) return;
    if (this.contested(next.sandboxId)) {
      this.drop(next.sandboxId);
      return;
    }
    if (this.forgotten.has(next.sandboxId)) {
      this.forgotten.set(next.sandboxId, this.now());
      return;
    }
    const had = this.routes.get(next.sandboxId);
    // Another pod or address for the same id (never expected): its connections go with the old one.
    if (had && (had.podUid !== next.podUid || had.podIP !== next.podIP)) this.drop(next.sandboxId);
    this.routes.set(next.sandboxId, next);
    this.confirmed.set(next.sandboxId, this.now());
    this.byPod.set(uid, next.sandboxId);
  }
}
