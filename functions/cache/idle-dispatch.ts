import type { V1Pod } from "@kubernetes/client-node";
import { orderCandidates } from "../../lib/claims/candidates.ts";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { KubeError } from "../../lib/kube/errors.ts";
import { ownedBy } from "../../lib/membership/pod-ownership.ts";
import type { CacheDeps } from "./cache-deps.ts";
import { Informer } from "./informer.ts";

/**
 * UNSUITABLE is what a waiter's claim answers for a pod it cannot use (its request does not fit the
 * pod's pool): the pod stays on offer to the other waiters, never to this one again.
 */
export const UNSUITABLE = Symbol("unsuitable for this waiter");

/**
 * Claim is a waiter's claim of one pod: what it won; undefined when it lost (the pod changed or
 * is not claimable: that version is dropped); UNSUITABLE. A rejection (the apiserver failed or
 * timed out) says nothing about the pod: it stays on offer and is tried again after a pause.
 */
export type Claim<T> = (pod: V1Pod, pool: SandboxPool) => Promise<T | undefined | typeof UNSUITABLE>;

/** Waiter is one waiting create: its claim, and how its wait ends. */
interface Waiter {
  claim: Claim<unknown>;
  /** pools are the waiter's own reads of the pools (what its claim is decided from). */
  pools: Map<string, SandboxPool>;
  finish: (won: unknown) => void;
  busy: boolean;
  expired: boolean;
  /** unsuitable names the pods this waiter cannot use. */
  unsuitable: Set<string>;
}

/** Stream is one watch of idle pods, shared by this process's waiters on the same pools. */
interface Stream {
  namespace: string;
  pools: Map<string, SandboxPool>;
  /**
   * env is the Env the pools are members of, as its newest waiter read it (undefined: none): its
   * group's scale-down policy says how long a marked pod may still be claimed.
   */
  env: SandboxEnv | undefined;
  waiters: Waiter[];
  /**
   * candidates are the claimable idle pods the watch reported, by name (retryAt: a claim of it
   * failed, try again then); inflight: being claimed.
   */
  candidates: Map<string, { pod: V1Pod; pool: SandboxPool; retryAt?: number }>;
  inflight: Set<string>;
  /** retry is the timer that dispatches again once a failed pod may be tried again, and when. */
  retry?: { due: number; timer: ReturnType<typeof setTimeout> } | undefined;
  /** informer watches the pools' idle pods (replay: every watch starts from the current state). */
  informer: Informer<V1Pod> | undefined;
  closed: boolean;
}

/** CLAIM_RETRY_MS: how long a pod whose claim failed (not lost: failed) waits before the next try. */
const CLAIM_RETRY_MS = 250;

/**
 * idleSelector selects the idle Pods of the given pools: a Pod that turns idle enters the
 * selection (ADDED), its readiness follows (MODIFIED), and the many writes of busy Pods never
 * reach the watch.
 */
function idleSelector(names: readonly string[]): string {
  const pools =
    names.length === 1
      ? `${SANDBOX_POOL_LABEL}=${names[0]}`
      : `${SANDBOX_POOL_LABEL} in (${names.join(",")})`;
  return `${pools},${SANDBOX_PHASE_LABEL}=${SANDBOX_PHASE.IDLE}`;
}

/**
 * IdleDispatch hands the idle pods of a pool (or of an Env's members) to the creates waiting for
 * them in this process, first come first served: one watch per set of pools however many wait,
 * and each claimable pod offered to one waiter at a time (only pods the waiter's pool owns:
 * ownedBy; the watch's label selector only finds candidates). Without it every waiter watched on its
 * own and raced for every pod, so W waiters and P new pods cost W watches and W×P claim patches,
 * W−1 of them lost: a wake under load drowned the apiserver in conflicts. What it holds is this
 * process's open requests and what its watch reported, never a source of truth: every claim is
 * still a preconditioned patch (another host may win), and a crash loses only waiters that are
 * gone with it. See ADR 0018.
 */
export class IdleDispatch {
  private readonly streams = new Map<string, Stream>();
  private readonly deps: Pick<CacheDeps, "watch" | "now" | "random" | "log" | "metrics">;

  constructor(deps: Pick<CacheDeps, "watch" | "now" | "random" | "log" | "metrics">) {
    this.deps = deps;
  }

  /**
   * wait waits until `claim` wins an idle pod of the pools (all in one namespace), or timeoutMs
   * passes, or `signal` aborts (the waiter gives up: its claim found it may not claim, say); a
   * claim under way then still counts. `env` is the Env the pools are members of, when they are.
   */
  wait<T>(
    pools: readonly SandboxPool[],
    timeoutMs: number,
    claim: Claim<T>,
    signal?: AbortSignal,
    env?: SandboxEnv,
  ): Promise<T | undefined> {
    const stream = this.streamFor(pools);
    stream.env = env;
    return new Promise<T | undefined>((resolve) => {
      const waiter: Waiter = {
        claim,
        pools: new Map(pools.map((p) => [p.metadata?.name ?? "", p])),
        busy: false,
        expired: false,
        unsuitable: new Set(),
        finish: (won) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", stop);
          const at = stream.waiters.indexOf(waiter);
          if (at >= 0) stream.waiters.splice(at, 1);
          if (stream.waiters.length === 0) this.close(stream);
          resolve(won as T | undefined);
        },
      };
      function stop() {
        waiter.expired = true;
        if (!waiter.busy) waiter.finish(undefined);
      }
      const timer = setTimeout(stop, timeoutMs);
      stream.waiters.push(waiter);
      if (signal?.aborted) return stop();
      signal?.addEventListener("abort", stop);
      this.dispatch(stream);
    });
  }

  private key(pools: readonly SandboxPool[]): string {
    const names = pools.map((p) => p.metadata?.name ?? "").sort();
    return `${pools[0]?.metadata?.namespace ?? ""}/${names.join(",")}`;
  }

  private streamFor(pools: readonly SandboxPool[]): Stream {
    const key = this.key(pools);
    const open = this.streams.get(key);
    if (open) return open;
    const stream: Stream = {
      namespace: pools[0]?.metadata?.namespace ?? "",
      pools: new Map(pools.map((p) => [p.metadata?.name ?? "", p])),
      env: undefined,
      waiters: [],
      candidates: new Map(),
      inflight: new Set(),
      informer: undefined,
      closed: false,
    };
    this.streams.set(key, stream);
    this.follow(stream);
    return stream;
  }

  private close(stream: Stream): void {
    stream.closed = true;
    stream.informer?.close();
    clearTimeout(stream.retry?.timer);
    for (const [key, s] of this.streams) if (s === stream) this.streams.delete(key);
  }

  /**
   * follow keeps a watch of the stream's idle pods open while it has waiters: an Informer that
   * opens each watch with no version, so each starts with the idle pods there are now (ADDED) and
   * the stream forgets what the last one said; renewed after WATCH_SECONDS (the transport gives up
   * on one that outlives that: a stopped apiserver, a dead connection).
   */
  private follow(stream: Stream): void {
    const path = `/api/v1/namespaces/${encodeURIComponent(stream.namespace)}/pods`;
    stream.informer = new Informer<V1Pod>(
      this.deps,
      { name: "idle dispatch", path, selector: { labelSelector: idleSelector([...stream.pools.keys()]) } },
      { replay: true, keep: false },
      {
        listed: () => {
          stream.candidates.clear();
        },
        changed: (change) => this.onEvent(stream, change.deleted ? "DELETED" : "ADDED", change.object),
      },
    );
  }

  private onEvent(stream: Stream, type: string, pod: V1Pod): void {
    const name = pod.metadata?.name ?? "";
    const pool = stream.pools.get(pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "");
    if (type === "DELETED" || !pool) {
      stream.candidates.delete(name);
      return;
    }
    if (type !== "ADDED" && type !== "MODIFIED") return;
    const [candidate] = orderCandidates(pool, [pod], this.deps.now(), stream.env, this.deps.random);
    if (candidate) stream.candidates.set(name, { pod: candidate, pool });
    else stream.candidates.delete(name);
    this.dispatch(stream);
  }

  /**
   * dispatch pairs claimable pods with free waiters, oldest waiter first, one claim per pod at a
   * time. A lost claim drops the version it tried (the pod changed: a newer version the watch
   * reported meanwhile stays, a later one is reported when it comes) and frees the waiter. A
   * failed claim keeps the pod for another try after CLAIM_RETRY_MS; an unsuitable one keeps it
   * for the other waiters.
   */
  private dispatch(stream: Stream): void {
    const now = Date.now();
    for (const [name, candidate] of stream.candidates) {
      const { pod, pool, retryAt } = candidate;
      if (stream.inflight.has(name)) continue;
      if (retryAt !== undefined && retryAt > now) {
        this.retryLater(stream, retryAt - now);
        continue;
      }
      // A waiter claims for its own read of the pool: a pod that read does not own (the pool was
      // made again since the stream's read) is not for that waiter.
      const poolOf = (w: Waiter) => w.pools.get(pool.metadata?.name ?? "") ?? pool;
      const waiter = stream.waiters.find(
        (w) => !w.busy && !w.expired && !w.unsuitable.has(name) && ownedBy(pod, poolOf(w)),
      );
      if (!waiter) continue;
      const target = poolOf(waiter);
      waiter.busy = true;
      stream.inflight.add(name);
      const settle = (won: unknown, failed = false) => {
        waiter.busy = false;
        stream.inflight.delete(name);
        const current = stream.candidates.get(name);
        if (won === UNSUITABLE) waiter.unsuitable.add(name);
        else if (failed && current?.pod === pod) current.retryAt = Date.now() + CLAIM_RETRY_MS;
        // Drop the version that lost; a newer one the watch reported meanwhile stays.
        else if (current?.pod === pod) stream.candidates.delete(name);
        const result = won === UNSUITABLE ? undefined : won;
        if (result !== undefined || waiter.expired) waiter.finish(result);
        this.dispatch(stream);
      };
      waiter.claim(pod, target).then(
        (won) => settle(won),
        (e: unknown) => {
          // A refusal of this request (403 from admission, 422 with causes) will not change on a
          // retry: the pod stays for the others. Anything else (5xx, 429, no answer) may pass.
          const refused = e instanceof KubeError && e.status >= 400 && e.status < 500 && e.status !== 429;
          this.deps.log.warn(
            { pod: name, err: String(e) },
            refused ? "claim refused for this create; the pod stays for others" : "claim failed; retrying",
          );
          if (refused) settle(UNSUITABLE);
          else settle(undefined, true);
        },
      );
    }
  }

  /**
   * retryLater dispatches again after `ms`, for pods whose failed claim may be tried again: one
   * timer per stream, moved earlier when a pod is due sooner than the one it waits for.
   */
  private retryLater(stream: Stream, ms: number): void {
    const due = Date.now() + ms;
    if (stream.closed || (stream.retry && stream.retry.due <= due)) return;
    clearTimeout(stream.retry?.timer);
    stream.retry = {
      due,
      timer: setTimeout(() => {
        stream.retry = undefined;
        this.dispatch(stream);
      }, ms),
    };
  }
}
