import type { V1Pod } from "@kubernetes/client-node";
import { CLAIMED_BY_LABEL, SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { resourceVersionOf } from "../../lib/kube/resource-version.ts";
import { retryDelay } from "../../lib/util/backoff.ts";
import type { CacheDeps } from "./cache-deps.ts";
import { type Seen, watchOnePod } from "./follow-pod.ts";
import { type Change, Informer, pause } from "./informer.ts";

/** Follower is one waiting create: the pod it follows and the newest version it was handed. */
interface Follower {
  name: string;
  at: bigint;
  seen: Seen;
  finish: () => void;
  /** done: the follower finished; nothing more is handed to it (a read may still answer). */
  done: boolean;
}

/** Kept is what a stream keeps of a pod's newest reported version (see Stream.recent). */
interface Kept {
  at: bigint;
  pod: V1Pod | undefined;
  came: number;
  left: boolean;
}

/** Stream is one watch of a pool's pods (an informer), shared by this process's followers of them. */
interface Stream {
  key: string;
  namespace: string;
  followers: Map<string, Set<Follower>>;
  /**
   * recent holds the newest version (undefined: deleted) of each pod the watch reported, in the
   * order reported (so oldest version first), each with when it came: a create whose claim landed
   * before its follow began is handed what the watch already said. `left`: the pod left a stream
   * of this host's claims (deleted, or its claimed-by label removed or replaced): read it.
   */
  recent: Map<string, Kept>;
  /**
   * covered: `recent` holds every version newer than this one (undefined while the stream starts
   * over after a 410). A follower whose claim is older reads its pod once.
   */
  covered: bigint | undefined;
  /** informer is the stream's watch: from the first follower's version, listing only after a 410. */
  informer: Informer<V1Pod>;
  /** reads stops the followers' reads when the stream closes. */
  reads: AbortController;
  linger?: ReturnType<typeof setTimeout>;
}

/**
 * PoolPodWatchOptions tunes how long a stream outlives its last follower and keeps what it saw,
 * and names the host's claims.
 */
export interface PoolPodWatchOptions {
  /** lingerMs: a stream with no follower stays open this long for the next create (default 10 s). */
  lingerMs?: number;
  /** keepMs: how long a reported version is kept for a follower that comes after it (default 10 s). */
  keepMs?: number;
  /**
   * claimedBy is this host's CLAIMED_BY_LABEL value (claimedByValue of its instance id), which its
   * creates' claims write: set, a pool's stream selects only the pods carrying it (ADR 0037), so
   * the host no longer decodes every event of every other host's sandboxes.
   */
  claimedBy?: string;
}

/**
 * PoolPodWatch follows claimed pods for the creates waiting for them in this process: one watch
 * per pool however many wait, each event handed to the followers of its pod. With a watch per
 * create, a burst of N waiting creates cost N watch requests (each its own TLS connection) and
 * the apiserver handed every pod event to every one of them (N² deliveries to filter). What it
 * holds is this process's open requests and what its watch reported, never a source of truth:
 * versions are ordered by resourceVersion (comparable since Kubernetes 1.35), each follower is
 * handed only versions newer than the last it had, and any gap (a 410, a follower whose claim
 * predates the watch) is closed by reading the pod. See ADR 0023. Each stream is an Informer
 * that starts at its first follower's version with no list and keeps nothing itself: after a 410
 * it lists one item only to learn where to start over.
 *
 * With claimedBy, each stream selects the pool's pods this host's claims carry (ADR 0037). A pod
 * that stops matching (released, deleted) comes as DELETED either way, so a follower is then
 * handed what a read of its pod says, not "gone"; a follower whose claim does not carry the label
 * (a claim written without it) is followed on a watch of its own.
 */
export class PoolPodWatch {
  private readonly streams = new Map<string, Stream>();
  private readonly deps: Pick<CacheDeps, "kube" | "watch" | "log" | "metrics">;
  private readonly lingerMs: number;
  private readonly keepMs: number;
  /** claimedBy is the label value this host's claims write, so its streams see them (options). */
  readonly claimedBy: string | undefined;

  constructor(
    deps: Pick<CacheDeps, "kube" | "watch" | "log" | "metrics">,
    options: PoolPodWatchOptions = {},
  ) {
    this.deps = deps;
    this.lingerMs = options.lingerMs ?? 10_000;
    this.keepMs = options.keepMs ?? 10_000;
    this.claimedBy = options.claimedBy;
  }

  /** close stops every stream (the host is shutting down: no create is left to follow a pod). */
  close(): void {
    for (const stream of this.streams.values()) this.stop(stream);
    this.streams.clear();
  }

  /** streamCount is the number of watches open now (for tests and metrics). */
  get streamCount(): number {
    return this.streams.size;
  }

  /**
   * follow hands `seen` each version of the pod newer than `from` until seen says done or signal
   * aborts. A pod with no pool label, a version that is not a number, or (with claimedBy) not
   * this host's claimed-by label is followed on a watch of its own.
   */
  follow(from: V1Pod, seen: Seen, signal: AbortSignal): Promise<void> {
    const pool = from.metadata?.labels?.[SANDBOX_POOL_LABEL];
    const at = resourceVersionOf(from.metadata?.resourceVersion);
    const ours = this.claimedBy === undefined || from.metadata?.labels?.[CLAIMED_BY_LABEL] === this.claimedBy;
    if (!pool || at === undefined || !ours || signal.aborted)
      return signal.aborted ? Promise.resolve() : watchOnePod(this.deps, from, seen, signal);
    const namespace = from.metadata?.namespace ?? "";
    const name = from.metadata?.name ?? "";
    const stream = this.streamFor(namespace, pool, from.metadata?.resourceVersion ?? "", at);
    return new Promise<void>((resolve) => {
      const follower: Follower = {
        name,
        at,
        seen,
        done: false,
        finish: () => {
          follower.done = true;
          signal.removeEventListener("abort", follower.finish);
          const set = stream.followers.get(name);
          set?.delete(follower);
          if (set?.size === 0) stream.followers.delete(name);
          if (stream.followers.size === 0) this.idle(stream);
          resolve();
        },
      };
      signal.addEventListener("abort", follower.finish, { once: true });
      const set = stream.followers.get(name) ?? new Set();
      set.add(follower);
      stream.followers.set(name, set);
      clearTimeout(stream.linger);
      const known = stream.recent.get(name);
      if (known) this.deliver(stream, follower, known);
      // A claim older than what the stream covers (or a stream starting over) may have missed a
      // version: read the pod once. What the watch says meanwhile is ordered against it.
      else if (stream.covered !== undefined && at < stream.covered) this.read(stream, follower);
    });
  }

  /**
   * deliver hands a follower what the stream kept of its pod; a pod that left a stream of this
   * host's claims after the follower's version is read instead (it may still be there).
   */
  private deliver(stream: Stream, follower: Follower, kept: Kept): void {
    if (!kept.left) this.hand(follower, kept.at, kept.pod);
    else if (kept.at > follower.at && !follower.done) this.read(stream, follower);
  }

  /** hand gives a follower a version if it is newer than the last it had. */
  private hand(follower: Follower, at: bigint, pod: V1Pod | undefined): void {
    if (at <= follower.at || follower.done) return;
    follower.at = at;
    if (follower.seen(pod)) follower.finish();
  }

  /** read reads a follower's pod and hands it over (in the background; see readNow). */
  private read(stream: Stream, follower: Follower): void {
    this.readNow(stream, follower).catch((e: unknown) =>
      this.deps.log.warn({ pod: follower.name, err: String(e) }, "follower's read stopped"),
    );
  }

  /** readNow reads a follower's pod (retried while reads fail) and hands it over. */
  private async readNow(stream: Stream, follower: Follower): Promise<void> {
    const { signal } = stream.reads;
    for (let attempt = 0; !signal.aborted && !follower.done; attempt++) {
      try {
        const pod = await orMissing<V1Pod>(this.deps.kube.getPod(stream.namespace, follower.name));
        // A pod that is gone stays gone for this sandbox (a slot's new pod has another sandbox).
        if (!pod) {
          if (!follower.done && follower.seen(undefined)) follower.finish();
        } else this.hand(follower, resourceVersionOf(pod.metadata?.resourceVersion) ?? follower.at, pod);
        return;
      } catch (e) {
        this.deps.log.debug({ pod: follower.name, err: String(e) }, "follower could not read its pod");
        await pause(retryDelay(attempt), signal);
      }
    }
  }

  /** streamFor is the pool's open stream, or a new one whose watch starts at `version` (covering `at`). */
  private streamFor(namespace: string, pool: string, version: string, at: bigint): Stream {
    const key = `${namespace}/${pool}`;
    const open = this.streams.get(key);
    if (open) return open;
    const selector = this.selector(pool);
    const informer = new Informer<V1Pod>(
      { watch: this.deps.watch, log: this.deps.log, metrics: this.deps.metrics },
      {
        name: "pool pod watch",
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        selector: { labelSelector: selector },
        // After a 410: one item, only to learn the version to start over from.
        list: (page) => this.deps.kube.listPods(namespace, selector, page),
      },
      { from: version, keep: false, onlyVersion: true },
    );
    const stream: Stream = {
      key,
      namespace,
      followers: new Map(),
      recent: new Map(),
      covered: at,
      informer,
      reads: new AbortController(),
    };
    informer.subscribe({
      changed: (change) => this.onChange(stream, change),
      // The watch cannot go on from its version (410 Gone): what it covered is unknown until the
      // informer has listed where to start over.
      outOfStep: () => {
        stream.covered = undefined;
      },
      listed: (_none, listVersion) => this.startOver(stream, listVersion),
    });
    this.streams.set(key, stream);
    return stream;
  }

  /** stop closes a stream's watch and its followers' reads. */
  private stop(stream: Stream): void {
    clearTimeout(stream.linger);
    stream.informer.close();
    stream.reads.abort();
  }

  /** idle closes a stream with no follower after lingerMs, unless one comes first. */
  private idle(stream: Stream): void {
    clearTimeout(stream.linger);
    stream.linger = setTimeout(() => {
      if (stream.followers.size > 0) return;
      this.stop(stream);
      if (this.streams.get(stream.key) === stream) this.streams.delete(stream.key);
    }, this.lingerMs);
  }

  /** onChange keeps what the watch said of a pod and hands it to the pod's followers. */
  private onChange(stream: Stream, change: Change<V1Pod>): void {
    const at = resourceVersionOf(change.version);
    if (at === undefined) return;
    const now = Date.now();
    // A stream of this host's claims also says DELETED of a pod that only stopped matching.
    const kept: Kept = {
      at,
      pod: change.deleted ? undefined : change.object,
      came: now,
      left: change.deleted && !!this.claimedBy,
    };
    const { name } = change;
    stream.recent.delete(name);
    stream.recent.set(name, kept);
    this.forget(stream, now);
    for (const follower of [...(stream.followers.get(name) ?? [])]) this.deliver(stream, follower, kept);
  }

  /** selector selects a pool's pods, and with claimedBy only this host's claims. */
  private selector(pool: string): string {
    const pods = `${SANDBOX_POOL_LABEL}=${pool}`;
    return this.claimedBy === undefined ? pods : `${pods},${CLAIMED_BY_LABEL}=${this.claimedBy}`;
  }

  /**
   * forget drops the versions kept longer than keepMs (the oldest first) and moves what the
   * stream covers past them: a follower older than that reads its pod instead.
   */
  private forget(stream: Stream, now: number): void {
    for (const [name, kept] of stream.recent) {
      if (now - kept.came <= this.keepMs) return;
      stream.recent.delete(name);
      if (stream.covered !== undefined && kept.at > stream.covered) stream.covered = kept.at;
    }
  }

  /**
   * startOver follows the informer's list after a 410: the stream now covers what comes after the
   * list's version, and every follower's pod is read (its versions in between were never seen).
   */
  private startOver(stream: Stream, version: string): void {
    stream.covered = resourceVersionOf(version) ?? 0n;
    stream.recent.clear();
    for (const set of stream.followers.values()) for (const f of set) this.read(stream, f);
  }
}
