// The Worker's dependencies: the steps' and the API's, built per invocation from its validated
// configuration, with what its isolate shares (isolate.ts).
import {
  ACTIVITY_REUSE_MS,
  DEFAULT_ACTIVITY_TIMEOUT_MS,
  httpActivitySource,
  sharePulls,
} from "../../functions/activity-source.ts";
import { type HostDeps, hostDeps, postStartDeps } from "../../functions/host-deps.ts";
import { parseTeamLimits, type TeamLimits } from "../../lib/claims/team-limits.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { fetchKubeTransport, fetchKubeWatch } from "../../lib/kube/fetch-transport.ts";
import type { Log } from "../../lib/util/log.ts";
import type { WorkerBindings, WorkerConfig } from "./config.ts";
import type { D1Like } from "./d1-history.ts";
import { isolateOf } from "./isolate.ts";

/**
 * workerDeps builds the steps' and the API's dependencies from the validated configuration: per
 * invocation the client and the marks, per isolate (isolateOf) the history store, the shared
 * reads of the keys Secret and the sealing keys.
 */
export async function workerDeps(config: WorkerConfig, env: WorkerBindings, log: Log): Promise<HostDeps> {
  const isolate = isolateOf(env.HISTORY as unknown as D1Like);
  // An [[mtls_certificates]] binding (KUBE_MTLS) presents a client certificate; else global fetch.
  const mtls = env.KUBE_MTLS;
  const kube = {
    server: config.KUBE_API_URL,
    token: config.KUBE_TOKEN,
    fetch: mtls
      ? (i: RequestInfo | URL, r?: RequestInit) => mtls.fetch(i, r)
      : (i: RequestInfo | URL, r?: RequestInit) => fetch(i, r),
  };

  return hostDeps({
    kube: new KubeClient(fetchKubeTransport(kube)),
    watch: fetchKubeWatch(kube),
    history: isolate.history,
    usage: isolate.usage,
    log,
    reporter: { controller: "agents.navix.sh/agentbox-functions", instance: "cloudflare-worker" },
    ...(config.CLUSTER_ID ? { clusterId: config.CLUSTER_ID } : {}),
    ...(config.ADOPT_POOLS ? { adoptPools: true } : {}),
    ...(config.IDLE_RELEASE ? { idleRelease: config.IDLE_RELEASE } : {}),
    instanceTypes: config.INSTANCE_TYPES,
    snapshotRetentionSeconds: config.SNAPSHOT_RETENTION_SECONDS,
    // One pull per invocation at most, shared by the pools it reconciles (see sharePulls).
    ...(config.ACTIVITY_SOURCE_URL
      ? {
          pullActivity: sharePulls(
            httpActivitySource({
              url: config.ACTIVITY_SOURCE_URL,
              ...(config.ACTIVITY_SOURCE_TOKEN ? { token: config.ACTIVITY_SOURCE_TOKEN } : {}),
              timeoutMs: DEFAULT_ACTIVITY_TIMEOUT_MS,
            }),
            ACTIVITY_REUSE_MS,
          ),
        }
      : {}),
    ...(config.SEALING_KEY
      ? {
          postStart: postStartDeps(await isolate.sealKeys(config.SEALING_KEY), (i, r) => fetch(i, r)),
        }
      : {}),
    // Per request, its own mark: a request is the unit that waits here, so the marks of
    // concurrent requests (in one isolate or many) add up instead of overwriting each other.
    pendingInstance: `worker-${crypto.randomUUID().slice(0, 12)}`,
    ...(config.ENVD_PORT ? { envdPort: config.ENVD_PORT } : {}),
    ...teamLimitsOf(config),
    // The isolate's shared reads of the keys Secret outlive this request's deps.
    keyReads: isolate.keyReads,
    keyCacheReads: isolate.keyCacheReads,
  });
}

/** teamLimitsOf is the Worker's team caps (readWorkerEnv has refused bad ones already). */
function teamLimitsOf(config: WorkerConfig): { teamLimits?: TeamLimits } {
  const limits = parseTeamLimits(config.TEAM_SANDBOX_LIMIT, config.TEAM_SANDBOX_LIMITS);
  return limits.ok && limits.value ? { teamLimits: limits.value } : {};
}
