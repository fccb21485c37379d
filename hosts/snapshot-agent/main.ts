// The node's snapshot agent as a program (ADR 0045): one per node, beside containerd. It watches
// the SandboxSnapshots of its node and commits them with the containerd backend (`ctr snapshots
// diff` and the OCI distribution API), writing the outcome as their status. Started by the local
// cluster beside the real node's kubelet (infra/cluster/real-node/start-real-node.ts) and, in a
// real cluster, by the DaemonSet of infra/deploy/components/snapshots. SIGTERM stops it cleanly.
// At start it removes the spool an earlier run left in its --tmp-dir (it died mid-commit).
import { KubeConfig } from "@kubernetes/client-node";
import { containerdCommitter } from "../../functions/snapshots/containerd-committer.ts";
import { RegistryClient } from "../../functions/snapshots/registry-client.ts";
import { startSnapshotAgent } from "../../functions/snapshots/snapshot-agent.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { cleanSpool, ctrDiff } from "../node/ctr-diff.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../node/kube-transport.ts";
import { hostLogger } from "../node/logger.ts";
import { installProcessPolicy } from "../node/process-policy.ts";
import { installStopSignals } from "../node/stop-signals.ts";
import { basicAuthFetch, parseAgentFlags, USAGE } from "./flags.ts";

const flags = parseAgentFlags(process.argv.slice(2));
if (!flags.ok) {
  console.error(`snapshot-agent: ${flags.error}\n\n${USAGE}`);
  process.exit(2);
}
const f = flags.value;
const logger = hostLogger(f.logLevel);
const kc = new KubeConfig();
if (f.kubeconfig) kc.loadFromFile(f.kubeconfig);
else kc.loadFromDefault();

const auth = process.env.AGENTBOX_REGISTRY_AUTH;
const snapshotRegistry = f.endpoints[f.registryName] ?? `https://${f.registryName}`;
const registry = new RegistryClient({
  endpoints: f.endpoints,
  ...(auth ? { fetch: basicAuthFetch(snapshotRegistry, auth) } : {}),
});
const committer = containerdCommitter({
  diff: ctrDiff({
    ctr: f.ctr,
    address: f.containerdAddress,
    tmpDir: f.tmpDir,
    timeoutMs: f.commitTimeoutMs,
  }),
  registry,
});
// Before any commit of this run spools: what is there is an earlier run's.
const spool = await cleanSpool(f.tmpDir);
if (spool.removed.length > 0)
  logger.info({ tmpDir: f.tmpDir, removed: spool.removed }, "removed an earlier run's commit spool");
if (spool.left.length > 0)
  logger.warn({ tmpDir: f.tmpDir, left: spool.left }, "left spool-like directories that hold other files");
const agent = startSnapshotAgent({
  kube: new KubeClient(nodeKubeTransport(kc)),
  watch: nodeKubeWatch(kc),
  fieldSelector: f.fieldSelector,
  committer,
  registry: f.registryName,
  log: logger,
  now: () => new Date(),
  commitTimeoutMs: f.commitTimeoutMs,
});
installProcessPolicy(process, logger, () => agent.stop());
installStopSignals(process, logger, () => agent.stop());
