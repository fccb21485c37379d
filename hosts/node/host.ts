import { hostname } from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { Cron } from "croner";
import {
  ACTIVITY_REUSE_MS,
  type ActivitySourceConfig,
  httpActivitySource,
  sharePulls,
} from "../../functions/activity-source.ts";
import type { ApiDeps } from "../../functions/api/deps.ts";
import { PendingGauge } from "../../functions/api/pending-gauge.ts";
import { postStartDeps, type StepDeps } from "../../functions/deps.ts";
import { PoolRunner } from "../../functions/pool-runner.ts";
import { reconcilePod } from "../../functions/reconcile-pod.ts";
import { RECONCILE, reconcilePool, STEPS } from "../../functions/reconcile-pool.ts";
import { tick } from "../../functions/tick.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { Log } from "../../lib/log.ts";
import { referenceDigestResolver } from "../../lib/sandbox/digest-resolver.ts";
import { importSealKeys } from "../../lib/sandboxes/sealing.ts";
import { auditPodTargets, auditTargets, type PoolKey } from "../../lib/triggers/audit-targets.ts";
import type { AuditEventList } from "../../webhooks/audit.ts";
import { createApp } from "../app.ts";
import { nodeKubeTransport, nodeKubeWatch } from "./kube-transport.ts";
import { serveHttps } from "./serve.ts";
import { SqliteHistoryStore } from "./sqlite-history.ts";

/** POOL_RUN_INTERVAL_MS spaces one pool's back-to-back whole-pool runs in this process. */
const POOL_RUN_INTERVAL_MS = 1000;

export interface HostConfig {
  kubeconfig: KubeConfig;
  /** Token the apiserver presents to /admission and /audit. */
  callbackToken: string;
  /** Token operators present to /functions. */
  adminToken: string;
  historyPath: string;
  listen: { host: string; port: number; certFile: string; keyFile: string };
  /** Tick period in seconds; 0 turns the tick off (audit events and manual triggers only). */
  tickSeconds: number;
  tickConcurrency: number;
  log: Log;
  /** auditFilter limits which pools audit events may trigger (all by default). */
  auditFilter?: (key: PoolKey) => boolean;
  /** Where the hashed API keys live (default agentbox-system/agentbox-api-keys). */
  apiKeys?: { namespace: string; name: string };
  /**
   * sealingKey (≥ 32 characters) seals claims' env vars into their pods and derives envd access
   * tokens; without it, creates with env vars and the E2B API answer 400.
   */
  sealingKey?: string;
  /** envdPort is where post-start hooks reach envd in a pod (default 49983). */
  envdPort?: number;
  /** postStartDeadlineSeconds after the start, sandboxes whose hooks still fail are released (60). */
  postStartDeadlineSeconds?: number;
  /** The pulled activity source idle-release asks first (none: the last-active annotation only). */
  activitySource?: ActivitySourceConfig;
  /** onAuditEvents also receives every accepted batch (tests record them). */
  onAuditEvents?: (list: AuditEventList) => void;
}

export interface Host {
  deps: StepDeps;
  api: ApiDeps;
  runner: PoolRunner;
  close(): Promise<void>;
}

/**
 * startHost runs the Node host: the HTTPS app (admission, audit, manual triggers), the audit
 * dispatch (each batch's pools reconciled once, after the answer), and the croner tick as the
 * safety net for anything the audit path missed.
 */
export async function startHost(config: HostConfig): Promise<Host> {
  const history = new SqliteHistoryStore(config.historyPath);
  const deps: StepDeps = {
    kube: new KubeClient(nodeKubeTransport(config.kubeconfig)),
    history,
    now: () => new Date(),
    log: config.log,
    digests: referenceDigestResolver,
    reporter: { controller: "agents.navix.sh/agentbox-functions", instance: hostname() },
    ...(config.sealingKey
      ? {
          postStart: postStartDeps(
            await importSealKeys(config.sealingKey),
            globalThis.fetch,
            config.postStartDeadlineSeconds,
          ),
        }
      : {}),
    ...(config.activitySource
      ? { pullActivity: sharePulls(httpActivitySource(config.activitySource), ACTIVITY_REUSE_MS) }
      : {}),
  };
  const api: ApiDeps = {
    ...deps,
    apiKeys: config.apiKeys ?? { namespace: "agentbox-system", name: "agentbox-api-keys" },
    random: Math.random,
    pending: new PendingGauge(deps, deps.reporter.instance),
    ...(config.envdPort ? { envdPort: config.envdPort } : {}),
    watch: nodeKubeWatch(config.kubeconfig),
  };
  // Whole-pool runs (pool writes, pod writes, ticks) at most about once a second per pool: each
  // lists every pod of the pool. A written pod's own transitions run at once on a read of that pod.
  const runner = new PoolRunner(
    async (key, snapshot) => {
      const [ns = "", name = ""] = key.split("/");
      return reconcilePool(deps, ns, name, RECONCILE, snapshot);
    },
    config.log,
    POOL_RUN_INTERVAL_MS,
  );
  const podRunner = new PoolRunner(async (key) => {
    const [ns = "", pool = "", pod = ""] = key.split("/");
    return reconcilePod(deps, ns, pool, pod);
  }, config.log);
  const filter = config.auditFilter ?? (() => true);
  const app = createApp({
    callbackToken: config.callbackToken,
    adminToken: config.adminToken,
    logger: config.log,
    onAuditEvents: (list) => {
      config.onAuditEvents?.(list);
      for (const key of auditPodTargets(list.items)) {
        if (filter(key.split("/").slice(0, 2).join("/") as PoolKey)) void podRunner.trigger(key);
      }
      for (const key of auditTargets(list.items).filter(filter)) void runner.trigger(key);
    },
    api,
    functions: {
      steps: [RECONCILE, ...STEPS.map((s) => s.name)],
      run: (step, namespace, pool) => reconcilePool(deps, namespace, pool, step),
    },
  });
  const server = await serveHttps(
    app,
    config.listen.port,
    config.listen.certFile,
    config.listen.keyFile,
    config.listen.host,
  );
  const periodMs = config.tickSeconds * 1000;
  const cron =
    config.tickSeconds > 0
      ? new Cron("* * * * * *", { interval: config.tickSeconds, protect: true }, async () => {
          const report = await tick(deps, {
            periodMs,
            jitter: 0.2,
            concurrency: config.tickConcurrency,
            run: async (ns, name, snapshot) => {
              await runner.trigger(`${ns}/${name}`, snapshot);
              return undefined;
            },
          }).catch((err: unknown) => {
            config.log.warn({ err: String(err) }, "tick failed");
            return undefined;
          });
          if (report) config.log.debug({ ...report }, "tick");
        })
      : undefined;
  return {
    deps,
    api,
    runner,
    close: async () => {
      cron?.stop();
      await server.close();
      await api.pending?.flushed();
      await podRunner.idle();
      await runner.idle();
      history.close();
    },
  };
}
