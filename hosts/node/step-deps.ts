import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import {
  ACTIVITY_REUSE_MS,
  type ActivitySourceConfig,
  httpActivitySource,
  mergePulls,
  type PullActivity,
  sharePulls,
} from "../../functions/activity-source.ts";
import { postStartDeps, type StepDeps } from "../../functions/deps.ts";
import type { DecideOptions } from "../../lib/autoscale/group-decision.ts";
import { importSealKeys } from "../../lib/claims/sealing.ts";
import type { ConfigMapRef } from "../../lib/env/instance-types.ts";
import type { HistoryStore } from "../../lib/history/store.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeTimeouts } from "../../lib/kube/transport.ts";
import { referenceDigestResolver } from "../../lib/lifecycle/digest-resolver.ts";
import { meteredTransport } from "../../lib/metrics/metered-transport.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import type { IdleReleaseMode } from "../../lib/reconcile/idle-release.ts";
import type { Log } from "../../lib/util/log.ts";
import { SharedRead, SharedReads } from "../../lib/util/shared-read.ts";
import { nodeKubeTransport } from "./kube-transport.ts";

/** POOL_READ_SHARE_MS: how long one watch-cache read of a pool serves this thread's pod runs (ADR 0020). */
const POOL_READ_SHARE_MS = 500;

/** CATALOG_READ_SHARE_MS: how long one read of the instance type catalog serves this thread's Env runs. */
const CATALOG_READ_SHARE_MS = 1000;

/** StepSettings are the Node host's settings the reconcile steps depend on. */
export interface StepSettings {
  /** sealingKey (≥ 32 characters) lets post-start hooks open sealed env vars. */
  sealingKey?: string;
  /** postStartDeadlineSeconds after the start, sandboxes whose hooks still fail are released (60). */
  postStartDeadlineSeconds?: number;
  /** The pulled activity source idle-release asks first (none: the last-active annotation only). */
  activitySource?: ActivitySourceConfig;
  /** clusterId is the local cluster's ID (the Env step's segment); unset, Envs are not reconciled. */
  clusterId?: string;
  /** adoptPools gives every standalone pool a same-named Env (opt-in). */
  adoptPools?: boolean;
  /** autoscale: the autoscaler's settings besides the groups' policies (benchmarks only). */
  autoscale?: DecideOptions;
  /** idleRelease is what counts as activity for idle timeouts (default: pulled with a source, else reported). */
  idleRelease?: IdleReleaseMode;
  /** kubeTimeouts bound each apiserver request by kind (DEFAULT_KUBE_TIMEOUTS for those unset). */
  kubeTimeouts?: Partial<KubeTimeouts>;
  /**
   * instanceId names this host among the replicas: its Events' reporting instance and the key of
   * its pending-demand marks (default: the hostname, the pod's name in a Deployment).
   */
  instanceId?: string;
  /** instanceTypes is the instance type catalog's ConfigMap (default agentbox-system/agentbox-instance-types). */
  instanceTypes?: ConfigMapRef;
}

/**
 * nodeStepDeps is what the steps touch in the Node host, built the same way in each thread that
 * runs them (the API's thread for waiting creates, the reconciler's for everything else), with
 * that thread's metrics when given (its apiserver requests are counted too). Idle release pulls
 * the configured activity source and `hostActivity` (the host's router), both when both are set.
 */
export async function nodeStepDeps(
  kubeconfig: KubeConfig,
  history: HistoryStore,
  log: Log,
  settings: StepSettings,
  metrics?: Metrics,
  hostActivity?: PullActivity,
): Promise<StepDeps> {
  const pulls = [
    ...(settings.activitySource ? [httpActivitySource(settings.activitySource)] : []),
    ...(hostActivity ? [hostActivity] : []),
  ];
  const transport = nodeKubeTransport(
    kubeconfig,
    settings.kubeTimeouts ? { timeouts: settings.kubeTimeouts } : {},
  );
  return {
    kube: new KubeClient(metrics ? meteredTransport(transport, metrics) : transport),
    ...(metrics ? { metrics } : {}),
    history,
    now: () => new Date(),
    log,
    digests: referenceDigestResolver,
    reporter: {
      controller: "agents.navix.sh/agentbox-functions",
      instance: settings.instanceId ?? hostname(),
    },
    ...(settings.sealingKey
      ? {
          postStart: postStartDeps(
            await importSealKeys(settings.sealingKey),
            globalThis.fetch,
            settings.postStartDeadlineSeconds,
          ),
        }
      : {}),
    noticed: new Set<string>(),
    poolReads: new SharedReads(POOL_READ_SHARE_MS, () => Date.now()),
    ...(settings.instanceTypes ? { instanceTypes: settings.instanceTypes } : {}),
    catalogReads: new SharedRead(CATALOG_READ_SHARE_MS, () => Date.now()),
    ...(settings.idleRelease ? { idleRelease: settings.idleRelease } : {}),
    ...(settings.clusterId ? { clusterId: settings.clusterId } : {}),
    ...(settings.adoptPools ? { adoptPools: true } : {}),
    ...(settings.autoscale ? { autoscale: settings.autoscale } : {}),
    ...(pulls.length ? { pullActivity: sharePulls(mergePulls(pulls), ACTIVITY_REUSE_MS) } : {}),
  };
}
