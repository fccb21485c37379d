import type { V1Pod, V1Secret } from "@kubernetes/client-node";
import type { DecideOptions } from "../lib/autoscale/group-decision.ts";
import type { SealKeys } from "../lib/claims/sealing.ts";
import { DEFAULT_SNAPSHOT_RETENTION_SECONDS } from "../lib/claims/snapshot-retention.ts";
import type { TeamLimits } from "../lib/claims/team-limits.ts";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import { ENVD_PORT } from "../lib/data-plane/sandbox-host.ts";
import type { ConfigMapRef, InstanceTypeCatalog } from "../lib/env/instance-types.ts";
import type { HistoryStore } from "../lib/history/store.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { KubeWatchTransport } from "../lib/kube/transport.ts";
import { type DigestResolver, referenceDigestResolver } from "../lib/lifecycle/digest-resolver.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { IdleReleaseMode } from "../lib/reconcile/idle-release.ts";
import type { UsageStore } from "../lib/usage/store.ts";
import type { Log } from "../lib/util/log.ts";
import { PacedRead } from "../lib/util/paced-read.ts";
import { NextReads, SharedRead, SharedReads } from "../lib/util/shared-read.ts";
import type { PullActivity } from "./activity-source.ts";
import { KEY_MISS_GAP_MS, KEY_READ_SHARE_MS } from "./api/authenticate.ts";
import { CreateStamps } from "./api/create-stamps.ts";
import { PendingGauge } from "./api/pending-gauge.ts";
import { TeamHolds } from "./api/team-usage.ts";
import { IdleDispatch } from "./cache/idle-dispatch.ts";
import { IdleFeed } from "./cache/idle-feed.ts";
import { PoolPodWatch } from "./cache/pool-pod-watch.ts";

/** POOL_READ_SHARE_MS: how long one watch-cache read of a pool serves a host's pod runs (ADR 0020). */
const POOL_READ_SHARE_MS = 500;

/** CATALOG_READ_SHARE_MS: how long one read of the instance type catalog serves a host's Env runs. */
export const CATALOG_READ_SHARE_MS = 1000;

/** DEFAULT_API_KEYS is the Secret holding the hashed API keys unless the host says otherwise. */
export const DEFAULT_API_KEYS = { namespace: "agentbox-system", name: "agentbox-api-keys" } as const;

/** PostStartDeps is what running post-start hooks needs: the sealing keys and how hard to try. */
export interface PostStartDeps {
  keys: SealKeys;
  /** fetch reaches the pods (global fetch in both hosts). */
  fetch: typeof fetch;
  /** retryDelaysMs are the waits before each retry within one run (envd may still be starting). */
  retryDelaysMs: readonly number[];
  attemptTimeoutMs: number;
  /** deadlineSeconds after the start, a sandbox whose hooks still fail is released as Failed. */
  deadlineSeconds: number;
}

/**
 * postStartDeps is how both hosts run hooks: two retries within a run (envd may still be
 * starting), 2 s per attempt, and a deadline of 60 s after the start unless told otherwise.
 */
export function postStartDeps(keys: SealKeys, fetchFn: typeof fetch, deadlineSeconds = 60): PostStartDeps {
  return { keys, fetch: fetchFn, retryDelaysMs: [250, 1000], attemptTimeoutMs: 2000, deadlineSeconds };
}

/**
 * HostDeps is everything the steps, the API's handlers and the watch-fed caches touch, as one
 * object a host builds once (hostDeps) and passes down; each function names the fields it uses
 * (`Pick<HostDeps, "kube" | "now">`), so what a function depends on is in its signature. Every
 * field is present: a capability a host lacks is `undefined`, said once here, instead of a
 * fallback object built on the fly by whoever missed it. No module-level state, so both hosts and
 * the tests hand in their own pieces.
 */
export interface HostDeps {
  // Reaching the cluster and keeping records.
  kube: KubeClient;
  /** watch streams watch requests (the caches; a create waiting for its sandbox to run). */
  watch: KubeWatchTransport;
  history: HistoryStore;
  /** usage keeps sandboxes' resource-use samples, in the history's database; undefined: none kept. */
  usage: UsageStore | undefined;
  digests: DigestResolver;

  // This host.
  now: () => Date;
  /** random spreads concurrent claims over different candidates. */
  random: () => number;
  log: Log;
  /** metrics are this thread's Prometheus instruments (the Node host); undefined: nothing is measured. */
  metrics: Metrics | undefined;
  /** Who we are in Events (reportingController / reportingInstance) and in pending-demand marks. */
  reporter: { controller: string; instance: string };
  /** noticed holds the one-time warnings this process already logged (say why once, not per run). */
  noticed: Set<string>;

  // What the operator configured.
  /**
   * clusterId is the local cluster's ID: the Env step materialises only the Env segments with this
   * clusterID and never writes another. Undefined, the Env step refuses to run (the pool steps run).
   */
  clusterId: string | undefined;
  /** adoptPools lets the tick give every standalone pool a same-named Env (opt-in). */
  adoptPools: boolean;
  /** autoscale are the autoscaler's settings besides the groups' policies (the bench's cooldownMode). */
  autoscale: DecideOptions | undefined;
  /** idleRelease is what counts as activity for idle timeouts; undefined: pulled with pullActivity, else reported. */
  idleRelease: IdleReleaseMode | undefined;
  /** instanceTypes is the instance type catalog's ConfigMap; undefined: DEFAULT_INSTANCE_TYPES. */
  instanceTypes: ConfigMapRef | undefined;
  /** apiKeys is the Secret holding hashed API keys (data: sha256(key) → tenant entry). */
  apiKeys: { namespace: string; name: string };
  /** envdPort is the port post-start hooks reach envd on (E2B's, 49983, unless configured). */
  envdPort: number;
  /** teamLimits cap each team's sandboxes held at once; undefined: no caps. */
  teamLimits: TeamLimits | undefined;
  /** snapshotRetentionSeconds is how long a paused sandbox is kept unresumed (ADR 0045). */
  snapshotRetentionSeconds: number;

  // What this host can do.
  /** postStart runs post-start hooks; undefined (no sealing key), hooks fail with a clear reason. */
  postStart: PostStartDeps | undefined;
  /** pullActivity is the pulled activity source idle release reads first (functions/activity-source.ts). */
  pullActivity: PullActivity | undefined;
  /** hashKey is hashApiKey's value computed synchronously (node:crypto); undefined: WebCrypto (the Worker). */
  hashKey: ((key: string) => string) | undefined;
  /** onReleased hears each sandbox this host released through the API (its router forgets the route). */
  onReleased: (sandboxId: string) => void;
  /** stopping aborts when the host's shutdown grace is over (ADR 0029); never, on hosts without one. */
  stopping: AbortSignal;

  // Reads this host shares among its requests and runs (ADR 0020): built once, here.
  poolReads: SharedReads<SandboxPool | undefined>;
  catalogReads: SharedRead<InstanceTypeCatalog | undefined>;
  /** keyReads paces the key check's etcd reads of the keys Secret (authenticate.ts). */
  keyReads: PacedRead<V1Secret | undefined>;
  /** keyCacheReads shares the key check's watch-cache reads of the keys Secret. */
  keyCacheReads: SharedRead<V1Secret | undefined>;
  /** freshLooks shares a create's consistent list of a pool's idle pods with the creates asking at that moment. */
  freshLooks: NextReads<V1Pod[]>;

  // The host's helpers and watch-fed caches (hints, never authority: functions/cache).
  /** idle shares one idle-pod watch among this host's creates waiting for an idle pod. */
  idle: IdleDispatch;
  /** stamps throttles this host's last-sandbox-create-time writes per pool. */
  stamps: CreateStamps;
  /** teamHolds checks this host's claims against teamLimits as they happen. */
  teamHolds: TeamHolds;
  /** pending publishes this host's waiting creates per pool (status.pendingRequests). */
  pending: PendingGauge;
  /** idleFeed hands creates candidates from one watch of a pool's idle pods (ADR 0024); undefined: none kept. */
  idleFeed: IdleFeed | undefined;
  /** pods follows claimed pods for waiting creates on one watch per pool (ADR 0023); undefined: a watch each. */
  pods: PoolPodWatch | undefined;
}

/** HostParts are what a host brings; hostDeps builds the rest. Unset settings take their defaults. */
export interface HostParts {
  kube: KubeClient;
  watch: KubeWatchTransport;
  history: HistoryStore;
  usage?: UsageStore;
  log: Log;
  reporter: { controller: string; instance: string };
  now?: () => Date;
  random?: () => number;
  digests?: DigestResolver;
  metrics?: Metrics;
  clusterId?: string;
  adoptPools?: boolean;
  autoscale?: DecideOptions;
  idleRelease?: IdleReleaseMode;
  instanceTypes?: ConfigMapRef;
  apiKeys?: { namespace: string; name: string };
  envdPort?: number;
  teamLimits?: TeamLimits;
  snapshotRetentionSeconds?: number;
  postStart?: PostStartDeps;
  pullActivity?: PullActivity;
  hashKey?: (key: string) => string;
  onReleased?: (sandboxId: string) => void;
  stopping?: AbortSignal;
  /** keyReads and keyCacheReads, when the host keeps them longer than one HostDeps (a Worker isolate). */
  keyReads?: PacedRead<V1Secret | undefined>;
  keyCacheReads?: SharedRead<V1Secret | undefined>;
  /** pendingInstance keys this host's pending-demand marks (default: the reporter's instance). */
  pendingInstance?: string;
  /**
   * watchFed: the host keeps watch-fed caches across requests (the Node host): an idle feed whose
   * creates take the idle pods nearest `home` first, and claim followers that select only the
   * pods carrying `claimedBy` (ADR 0037). Unset (the Worker): neither.
   */
  watchFed?: { home: string; claimedBy: string | undefined };
}

/** hostDeps builds a host's HostDeps once from its parts: every shared read, helper and cache. */
export function hostDeps(parts: HostParts): HostDeps {
  const now = parts.now ?? (() => new Date());
  const random = parts.random ?? Math.random;
  const clock = () => Date.now();
  const base = { kube: parts.kube, watch: parts.watch, log: parts.log, now, random, metrics: parts.metrics };
  return {
    ...base,
    history: parts.history,
    usage: parts.usage,
    digests: parts.digests ?? referenceDigestResolver,
    reporter: parts.reporter,
    noticed: new Set<string>(),
    clusterId: parts.clusterId,
    adoptPools: parts.adoptPools ?? false,
    autoscale: parts.autoscale,
    idleRelease: parts.idleRelease,
    instanceTypes: parts.instanceTypes,
    apiKeys: parts.apiKeys ?? DEFAULT_API_KEYS,
    envdPort: parts.envdPort ?? ENVD_PORT,
    teamLimits: parts.teamLimits,
    snapshotRetentionSeconds: parts.snapshotRetentionSeconds ?? DEFAULT_SNAPSHOT_RETENTION_SECONDS,
    postStart: parts.postStart,
    pullActivity: parts.pullActivity,
    hashKey: parts.hashKey,
    onReleased: parts.onReleased ?? (() => {}),
    stopping: parts.stopping ?? new AbortController().signal,
    poolReads: new SharedReads(POOL_READ_SHARE_MS, clock),
    catalogReads: new SharedRead(CATALOG_READ_SHARE_MS, clock),
    keyReads: parts.keyReads ?? new PacedRead(KEY_MISS_GAP_MS, clock),
    keyCacheReads: parts.keyCacheReads ?? new SharedRead(KEY_READ_SHARE_MS, clock),
    freshLooks: new NextReads(clock),
    idle: new IdleDispatch(base),
    stamps: new CreateStamps(base),
    teamHolds: new TeamHolds(base),
    pending: new PendingGauge(base, parts.pendingInstance ?? parts.reporter.instance),
    idleFeed: parts.watchFed ? new IdleFeed(base, { home: parts.watchFed.home }) : undefined,
    pods: parts.watchFed
      ? new PoolPodWatch(
          base,
          parts.watchFed.claimedBy === undefined ? {} : { claimedBy: parts.watchFed.claimedBy },
        )
      : undefined,
  };
}
