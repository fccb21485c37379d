import type { DecideOptions } from "../lib/autoscale/group-decision.ts";
import type { SealKeys } from "../lib/claims/sealing.ts";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import type { ConfigMapRef, InstanceTypeCatalog } from "../lib/env/instance-types.ts";
import type { HistoryStore } from "../lib/history/store.ts";
import type { KubeClient } from "../lib/kube/client.ts";
import type { DigestResolver } from "../lib/lifecycle/digest-resolver.ts";
import type { Metrics } from "../lib/metrics/metrics.ts";
import type { IdleReleaseMode } from "../lib/reconcile/idle-release.ts";
import type { Log } from "../lib/util/log.ts";
import type { SharedRead, SharedReads } from "../lib/util/shared-read.ts";

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

import type { PullActivity } from "./activity-source.ts";

/**
 * postStartDeps is how both hosts run hooks: two retries within a run (envd may still be
 * starting), 2 s per attempt, and a deadline of 60 s after the start unless told otherwise.
 */
export function postStartDeps(keys: SealKeys, fetchFn: typeof fetch, deadlineSeconds = 60): PostStartDeps {
  return { keys, fetch: fetchFn, retryDelaysMs: [250, 1000], attemptTimeoutMs: 2000, deadlineSeconds };
}

/**
 * StepDeps is everything a reconcile step touches, passed in explicitly: the API server, the
 * history store, the clock, the log, the image digest resolver and the optional pulled activity
 * source. No module-level state, so both hosts and the tests hand in their own pieces.
 */
export interface StepDeps {
  kube: KubeClient;
  history: HistoryStore;
  now: () => Date;
  log: Log;
  digests: DigestResolver;
  /** postStart runs post-start hooks; without it, hooks fail with a clear reason. */
  postStart?: PostStartDeps;
  /** Who we are in Events (reportingController / reportingInstance). */
  reporter: { controller: string; instance: string };
  /**
   * pullActivity, when set, is the pulled activity source the idle-release step reads before it
   * decides (functions/activity-source.ts); unset, only the last-active annotation counts.
   */
  pullActivity?: PullActivity;
  /**
   * idleRelease is what counts as activity for idle timeouts (IdleReleaseMode); unset: pulled
   * when pullActivity is set, else reported.
   */
  idleRelease?: IdleReleaseMode;
  /** noticed holds the one-time warnings this process already logged (say why once, not per run). */
  noticed?: Set<string>;
  /**
   * clusterId is the local cluster's ID: the Env step materialises only the Env segments with this
   * clusterID and never writes another. Unset, the Env step refuses to run (the pool steps run).
   */
  clusterId?: string;
  /** adoptPools lets the tick give every standalone pool a same-named Env (opt-in). */
  adoptPools?: boolean;
  /** autoscale are the autoscaler's settings besides the groups' policies (the bench's cooldownMode). */
  autoscale?: DecideOptions;
  /**
   * poolReads shares this process's watch-cache reads of a pool among the pod runs of about the
   * same moment (ADR 0020); unset, each run reads its pool.
   */
  poolReads?: SharedReads<SandboxPool | undefined>;
  /** metrics are this thread's Prometheus instruments (the Node host); unset, nothing is measured. */
  metrics?: Metrics;
  /**
   * instanceTypes is the instance type catalog's ConfigMap (AGENTBOX_INSTANCE_TYPES, Worker
   * INSTANCE_TYPES); unset, DEFAULT_INSTANCE_TYPES (agentbox-system/agentbox-instance-types).
   */
  instanceTypes?: ConfigMapRef;
  /** catalogReads shares this process's reads of the catalog for a moment; unset, each run reads it. */
  catalogReads?: SharedRead<InstanceTypeCatalog | undefined>;
}
