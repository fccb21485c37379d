import { hostname } from "node:os";
import { AggregatorRegistry, collectDefaultMetrics, Registry } from "prom-client";
import { SESSION_READ_GAP_MS } from "../../functions/console/console-sessions.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { STEP_NAMES } from "../../functions/runs/reconcile-pool.ts";
import { claimedByValue } from "../../lib/claims/claimed-by.ts";
import { PoolSamples } from "../../lib/console/pool-samples.ts";
import { ENVD_PORT } from "../../lib/data-plane/sandbox-host.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import { auditEnvTargets, auditPodTargets, auditTargets } from "../../lib/triggers/audit-targets.ts";
import { PacedRead } from "../../lib/util/paced-read.ts";
import { withTimeout } from "../../lib/util/with-timeout.ts";
import { createApp } from "../app.ts";
import { type DataPlaneThread, startRouter } from "./data-plane/router-child.ts";
import { type DrainSettings, drain } from "./drain.ts";
import { sha256Hex } from "./hash-key.ts";
import type { HostConfig } from "./host-config.ts";
import { nodeHostDeps } from "./node-host-deps.ts";
import { openHistory } from "./open-history.ts";
import { startPoolSampler } from "./pool-sampler.ts";
import type { Reconciler } from "./reconciler.ts";
import { startReconcilerThread } from "./reconciler-child.ts";
import { serveHttps } from "./serve.ts";

// HostConfig is re-exported: startHost's callers (the benchmarks) name it from here.
export type { HostConfig };

/** THREAD_METRICS_MS bounds how long a scrape waits for the reconciler thread's metrics. */
const THREAD_METRICS_MS = 2000;

/** CLOSE_DRAIN is close()'s drain: no settle, 2 s of grace (waits stopped after 1 s), well within EXIT_GRACE_MS. */
const CLOSE_DRAIN: DrainSettings = { settleMs: 0, graceMs: 2000 };

export interface Host {
  /** deps are the host's own thread's dependencies: the API's, and the steps its waiting creates drive. */
  deps: HostDeps;
  /** reconciler runs every other step, in its own thread (ADR 0013). */
  reconciler: Reconciler;
  /** dataPlane is the sandbox router (in a thread of its own), when configured. */
  dataPlane?: DataPlaneThread;
  /**
   * shutdown drains the host (drain: not ready, settle, stop accepting, grace, waits handed back,
   * cut), then removes its pending-demand marks and closes its views, threads and history (ADR
   * 0029). Called again, it returns the shutdown under way.
   */
  shutdown(settings: DrainSettings): Promise<void>;
  /** close is a quick shutdown (CLOSE_DRAIN): a failing host (ADR 0019), tests. */
  close(): Promise<void>;
}

/**
 * startHost runs the Node host: the HTTPS app (admission, audit, API, manual triggers) in this
 * thread, and the reconciler (audit-triggered runs, the tick, manual runs) in a worker thread of
 * its own, so a tick over thousands of pods never stalls an API request (ADR 0013).
 */
export async function startHost(config: HostConfig): Promise<Host> {
  const history = await openHistory(config, config.log);
  // This thread runs only the steps a waiting create drives (start, hooks); the pulled activity
  // source serves idle-release, which runs in the reconciler's thread.
  const hooks = {
    ...(config.instanceId ? { instanceId: config.instanceId } : {}),
    ...(config.kubeTimeouts ? { kubeTimeouts: config.kubeTimeouts } : {}),
    ...(config.sealingKey ? { sealingKey: config.sealingKey } : {}),
    ...(config.postStartDeadlineSeconds ? { postStartDeadlineSeconds: config.postStartDeadlineSeconds } : {}),
    ...(config.instanceTypes ? { instanceTypes: config.instanceTypes } : {}),
  };
  // The API thread routes Env creates across the local segment's members: it needs the cluster ID too.
  // This thread's metrics; the reconciler thread keeps its own, merged into /metrics per scrape.
  const metrics = createMetrics(new Registry());
  collectDefaultMetrics({ register: metrics.registry });
  // The shutdown's two signals: readiness (/readyz), and the end of its grace for waiting creates.
  // A host with a router is ready only once the router listens: the API listens first (the
  // router's watch may take a while), and traffic sent to the router's Service before must not
  // be refused.
  let ready = !config.dataPlane;
  const stopping = new AbortController();
  // As nodeHostDeps names the reporter: an empty instance id is none.
  const instance = config.instanceId || hostname();
  const deps = await nodeHostDeps(
    config.kubeconfig,
    history.store,
    config.log,
    { ...hooks, ...(config.clusterId ? { clusterId: config.clusterId } : {}) },
    metrics,
    undefined,
    {
      usage: history.usage,
      ...(config.apiKeys ? { apiKeys: config.apiKeys } : {}),
      ...(config.envdPort ? { envdPort: config.envdPort } : {}),
      ...(config.teamLimits ? { teamLimits: config.teamLimits } : {}),
      ...(config.snapshotRetentionSeconds
        ? { snapshotRetentionSeconds: config.snapshotRetentionSeconds }
        : {}),
      // Each host takes the idle pods nearest its instance id first (hosts rarely race for one
      // pod), and its claims carry that id, which its watch of them selects (ADR 0037).
      watchFed: { home: instance, claimedBy: claimedByValue(instance) },
      hashKey: sha256Hex,
      stopping: stopping.signal,
      // A release through this host's API drops the route at once (dataPlane is set below).
      onReleased: (id) => dataPlane?.forget(id),
    },
  );
  let dataPlane: DataPlaneThread | undefined;
  const reconciler = await startReconcilerThread(
    {
      ...hooks,
      ...(config.activitySource ? { activitySource: config.activitySource } : {}),
      kubeconfig: config.kubeconfig.exportConfig(),
      historyPath: config.historyPath,
      ...(config.historyDatabase ? { historyDatabase: config.historyDatabase } : {}),
      tickSeconds: config.tickSeconds,
      tickConcurrency: config.tickConcurrency,
      usageSampleSeconds: config.usageSampleSeconds ?? 10,
      ...(config.clusterId ? { clusterId: config.clusterId } : {}),
      ...(config.adoptPools ? { adoptPools: true } : {}),
      ...(config.autoscale ? { autoscale: config.autoscale } : {}),
      ...(config.idleRelease ? { idleRelease: config.idleRelease } : {}),
      ...(config.auditNamespacePrefix ? { auditNamespacePrefix: config.auditNamespacePrefix } : {}),
      ...(config.dataPlane ? { hostActivity: true } : {}),
    },
    config.log,
    metrics.reconcilerRestarts,
    // The router is this host's activity source; until it runs, idle release can tell nothing.
    async () => {
      if (!dataPlane) throw new Error("the sandbox router is not running yet");
      return dataPlane.activity();
    },
  );
  // One exposition for both threads; a thread that is restarting, or too busy to answer within
  // THREAD_METRICS_MS, leaves its part out of that scrape (the scraper keeps its own deadline).
  const collect = async () => {
    const threads = await Promise.all(
      [reconciler, ...(dataPlane ? [dataPlane] : [])].map((t) =>
        withTimeout(t.metrics(), THREAD_METRICS_MS, "a thread's metrics").catch(() => []),
      ),
    );
    const merged = AggregatorRegistry.aggregate([await metrics.registry.getMetricsAsJSON(), ...threads]);
    return { contentType: merged.contentType, body: await merged.metrics() };
  };
  // The console's pool charts: what the pool gauges said over the last hour (startPoolSampler).
  const poolSamples = new PoolSamples();
  const sampleSeconds = config.consoleSampleSeconds ?? 30;
  const prefix = config.auditNamespacePrefix ?? "";
  const inScope = (key: string) => config.auditTriggers !== false && key.startsWith(prefix);
  const app = createApp({
    callbackToken: config.callbackToken,
    adminToken: config.adminToken,
    logger: config.log,
    metrics,
    ...(sampleSeconds > 0 ? { poolSamples } : {}),
    consoleSessionReads: new PacedRead(SESSION_READ_GAP_MS, () => Date.now()),
    scrape: { token: config.metricsToken ?? config.adminToken, collect },
    ready: () => ready,
    onAuditEvents: (list) => {
      config.onAuditEvents?.(list);
      const envs = auditEnvTargets(list.items);
      reconciler.audit({
        pods: [...auditPodTargets(list.items)].filter(([key]) => inScope(key)),
        pools: auditTargets(list.items).filter(inScope),
        envs: {
          envs: envs.envs.filter(inScope),
          pools: envs.pools.filter((p) => inScope(`${p.namespace}/`)),
          templates: config.auditTriggers === false ? [] : envs.templates,
        },
      });
    },
    readTemplate: (name) => orMissing(deps.kube.getTemplate(name)),
    api: deps,
    ...(config.sandboxDomain ? { sandboxDomain: config.sandboxDomain } : {}),
    functions: {
      steps: STEP_NAMES,
      run: (step, namespace, pool) => reconciler.run(step, namespace, pool),
      runEnv: (namespace, env) => reconciler.runEnv(namespace, env),
      refreshMember: (namespace, env, member) => reconciler.refreshMember(namespace, env, member),
    },
  });
  const server = await serveHttps(
    app,
    config.listen.port,
    config.listen.certFile,
    config.listen.keyFile,
    config.listen.host,
  ).catch(async (e: unknown) => {
    await reconciler.close();
    throw e;
  });
  const dp = config.dataPlane;
  if (dp)
    dataPlane = await startRouter(
      config.kubeconfig,
      dp,
      {
        listen: config.listen,
        envdPort: config.envdPort ?? ENVD_PORT,
        ...(config.sandboxDomain ? { sandboxDomain: config.sandboxDomain } : {}),
        ...(config.sealingKey ? { sealingKey: config.sealingKey } : {}),
        ...(config.kubeTimeouts ? { kubeTimeouts: config.kubeTimeouts } : {}),
      },
      config.log,
      metrics.dataPlaneRestarts,
    ).catch(async (e: unknown) => {
      await server.close();
      await reconciler.close();
      throw e;
    });
  ready = true;
  const sampler = startPoolSampler(poolSamples, {
    intervalSeconds: sampleSeconds,
    gauges: () => reconciler.metrics(),
    timeoutMs: THREAD_METRICS_MS,
    log: config.log,
  });
  let stopped: Promise<void> | undefined;
  const shutdown = (settings: DrainSettings) => {
    stopped ??= (async () => {
      sampler.close();
      await drain(
        {
          ...server,
          cut: server.close,
          notReady: () => {
            ready = false;
          },
          stopWaits: () => stopping.abort(),
        },
        settings,
        config.log,
      );
      // The router served sandbox traffic through the drain; it goes once the API has.
      await dataPlane?.close();
      deps.pods?.close();
      deps.idleFeed?.close();
      deps.pending.close();
      await deps.pending.flushed();
      await deps.stamps.flushed();
      await reconciler.close();
      await history.close();
    })();
    return stopped;
  };
  return {
    deps,
    reconciler,
    ...(dataPlane ? { dataPlane } : {}),
    shutdown,
    close: () => shutdown(CLOSE_DRAIN),
  };
}
