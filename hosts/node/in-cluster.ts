// `npm run serve`: the Node host for a real cluster, configured by environment variables (see
// hosts/node/config.ts). The API server comes from the standard kubeconfig resolution of
// client-node: $KUBECONFIG, ~/.kube/config, or the in-cluster service account.
import { KubeConfig } from "@kubernetes/client-node";
import { readHostEnv } from "./config.ts";
import { startHost } from "./host.ts";
import { hostLogger } from "./logger.ts";
import { installProcessPolicy } from "./process-policy.ts";
import { installStopSignals } from "./stop-signals.ts";

const env = readHostEnv(process.env);
if (!env.ok) {
  console.error(`agentbox-functions: invalid configuration:\n- ${env.errors.join("\n- ")}`);
  process.exit(2);
}
const c = env.value;
const logger = hostLogger(c.logLevel);
const kubeconfig = new KubeConfig();
kubeconfig.loadFromDefault();
const host = await startHost({
  kubeconfig,
  callbackToken: c.callbackToken,
  adminToken: c.adminToken,
  ...(c.metricsToken ? { metricsToken: c.metricsToken } : {}),
  historyPath: c.historyPath,
  ...(c.historyDatabase ? { historyDatabase: c.historyDatabase } : {}),
  listen: { host: c.host, port: c.port, certFile: c.certFile, keyFile: c.keyFile },
  tickSeconds: c.tickSeconds,
  tickConcurrency: c.tickConcurrency,
  consoleSampleSeconds: c.consoleSampleSeconds,
  usageSampleSeconds: c.usageSampleSeconds,
  snapshotRetentionSeconds: c.snapshotRetentionSeconds,
  ...(c.sealingKey ? { sealingKey: c.sealingKey } : {}),
  envdPort: c.envdPort,
  ...(c.sandboxDomain ? { sandboxDomain: c.sandboxDomain } : {}),
  ...(c.dataPlane ? { dataPlane: c.dataPlane } : {}),
  ...(c.clusterId ? { clusterId: c.clusterId } : {}),
  instanceId: c.instanceId,
  adoptPools: c.adoptPools,
  idleRelease: c.idleRelease,
  instanceTypes: c.instanceTypes,
  log: logger,
  kubeTimeouts: c.kubeTimeouts,
  ...(c.teamLimits ? { teamLimits: c.teamLimits } : {}),
  ...(c.activitySource ? { activitySource: c.activitySource } : {}),
});
logger.info(
  {
    server: kubeconfig.getCurrentCluster()?.server,
    listen: `${c.host}:${c.port}`,
    // Only the database's host: the URL holds its password.
    history: c.historyDatabase ? `postgres ${new URL(c.historyDatabase.url).host}` : c.historyPath,
    console: `https://${c.host}:${c.port}/ui`,
    metrics: `https://${c.host}:${c.port}/metrics (bearer: ${c.metricsToken ? "AGENTBOX_METRICS_TOKEN" : "the admin token"})`,
    clusterId: c.clusterId ?? "none (SandboxEnvs are not reconciled)",
    instanceId: c.instanceId,
    dataPlane: host.dataPlane
      ? { domain: c.sandboxDomain ?? "none (header routing only)", ...host.dataPlane.ports }
      : "off",
    adoptPools: c.adoptPools,
    idleRelease: c.idleRelease,
    // Only the host: the URL's path or query may carry a credential.
    activitySource: c.activitySource ? new URL(c.activitySource.url).host : "none",
    shutdown: { settleSeconds: c.shutdown.settleMs / 1000, graceSeconds: c.shutdown.graceMs / 1000 },
  },
  "agentbox-functions started",
);
installProcessPolicy(process, logger, () => host.close());
// SIGTERM drains (ADR 0029): /readyz 503, settle, stop accepting, grace, exit 0; a second exits now.
installStopSignals(process, logger, () => host.shutdown(c.shutdown));
