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
import { type HostDeps, type HostParts, hostDeps, postStartDeps } from "../../functions/host-deps.ts";
import type { DecideOptions } from "../../lib/autoscale/group-decision.ts";
import { importSealKeys } from "../../lib/claims/sealing.ts";
import type { ConfigMapRef } from "../../lib/env/instance-types.ts";
import type { HistoryStore } from "../../lib/history/store.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeTimeouts } from "../../lib/kube/transport.ts";
import { meteredTransport } from "../../lib/metrics/metered-transport.ts";
import type { Metrics } from "../../lib/metrics/metrics.ts";
import type { IdleReleaseMode } from "../../lib/reconcile/idle-release.ts";
import type { Log } from "../../lib/util/log.ts";
import { nodeKubeTransport, nodeKubeWatch } from "./kube-transport.ts";

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
 * NodeHostExtras are what only the API's thread of the Node host adds: its watch-fed caches'
 * identity (watchFed), the shutdown's signal, the router's hook, the API's settings; and what
 * each thread opened besides its history (usage: openHistory's usage store).
 */
export type NodeHostExtras = Pick<
  HostParts,
  | "watchFed"
  | "stopping"
  | "onReleased"
  | "teamLimits"
  | "envdPort"
  | "apiKeys"
  | "hashKey"
  | "usage"
  | "snapshotRetentionSeconds"
>;

/**
 * nodeHostDeps is the Node host's HostDeps, built the same way in each thread that runs steps
 * (the API's thread for waiting creates, the reconciler's for everything else), with that
 * thread's metrics when given (its apiserver requests are counted too). Idle release pulls the
 * configured activity source and `hostActivity` (the host's router), both when both are set.
 */
export async function nodeHostDeps(
  kubeconfig: KubeConfig,
  history: HistoryStore,
  log: Log,
  settings: StepSettings,
  metrics?: Metrics,
  hostActivity?: PullActivity,
  extras: NodeHostExtras = {},
): Promise<HostDeps> {
  const pulls = [
    ...(settings.activitySource ? [httpActivitySource(settings.activitySource)] : []),
    ...(hostActivity ? [hostActivity] : []),
  ];
  const transport = nodeKubeTransport(
    kubeconfig,
    settings.kubeTimeouts ? { timeouts: settings.kubeTimeouts } : {},
  );
  return hostDeps({
    ...extras,
    kube: new KubeClient(metrics ? meteredTransport(transport, metrics) : transport),
    watch: nodeKubeWatch(
      kubeconfig,
      settings.kubeTimeouts?.read ? { headerTimeoutMs: settings.kubeTimeouts.read } : {},
    ),
    ...(metrics ? { metrics } : {}),
    history,
    log,
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
    ...(settings.instanceTypes ? { instanceTypes: settings.instanceTypes } : {}),
    ...(settings.idleRelease ? { idleRelease: settings.idleRelease } : {}),
    ...(settings.clusterId ? { clusterId: settings.clusterId } : {}),
    ...(settings.adoptPools ? { adoptPools: true } : {}),
    ...(settings.autoscale ? { autoscale: settings.autoscale } : {}),
    ...(pulls.length ? { pullActivity: sharePulls(mergePulls(pulls), ACTIVITY_REUSE_MS) } : {}),
  });
}
