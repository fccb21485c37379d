import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { advertiseAddress, apiserverArgs } from "./apiserver-args.ts";
import { ensureBinaries, ensureNodeBinaries } from "./binaries.ts";
import { writeCallbackConfigs, writeKubeconfig, writeKwokConfig } from "./configs.ts";
import { httpsGet } from "./http.ts";
import { kwokMetricsWiring } from "./kwok-metrics.ts";
import { createPki } from "./pki.ts";
import { freePorts } from "./ports.ts";
import { isOurs, type Started, startDetached, waitWhileRunning } from "./processes.ts";
import { REAL_NODE_NAME } from "./real-node/real-node.ts";
import { SNAPSHOT_AGENT_GROUP, snapshotAgentUser } from "./real-node/snapshot-agent.ts";
import { type PublishImages, startRealNode } from "./real-node/start-real-node.ts";
import { LOCAL_SANDBOX_DOMAINS } from "./sandbox-domains.ts";
import { type ClusterState, clusterDir, readState, writeState } from "./state.ts";

export interface UpOptions {
  name: string;
  /** Simulated image pull time for pod start and in-place image changes. */
  pullDelayMs: number;
  /** Time from ErrImagePull to ImagePullBackOff. */
  backoffDelayMs: number;
  nodes: number;
  /** Port of the Node host the apiserver calls back (audit, admission); picked when absent. */
  hostPort?: number;
  /** Audit webhook URL; defaults to https://127.0.0.1:<hostPort>/audit. */
  auditWebhookUrl?: string;
  /** sandboxDomains: the host's serving certificate also covers each `*.<domain>` (its sandbox router; LOCAL_SANDBOX_DOMAINS). */
  sandboxDomains?: readonly string[];
  /**
   * realNode adds one real node (kubelet, containerd, runc, a CNI bridge, a local registry)
   * beside the kwok nodes; publishImages puts its images into that registry (infra/images).
   */
  realNode?: { publishImages: PublishImages };
  log: (line: string) => void;
}

const KWOK_STAGES = fileURLToPath(new URL("../kwok/stages.yaml", import.meta.url));

/** isHealthy reports whether a recorded cluster still has all its processes and a ready apiserver. */
export async function isHealthy(state: ClusterState): Promise<boolean> {
  if (!state.processes.every((p) => isOurs(p.pid, state.dir))) return false;
  const token = readFileSync(join(state.dir, "admin-token"), "utf8").trim();
  const res = await httpsGet(`${state.server}/readyz`, state.caCert, token).catch(() => undefined);
  return res?.status === 200;
}

/**
 * up starts (or finds already running) the named local control plane: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler and kwok on loopback ports, then creates the kwok
 * nodes and waits until pods can be scheduled on them.
 */
export async function up(opts: UpOptions): Promise<ClusterState> {
  const existing = readState(opts.name);
  if (existing && (await isHealthy(existing))) {
    opts.log(`cluster ${opts.name} already running at ${existing.server}`);
    if (opts.realNode && !existing.realNode)
      opts.log(
        `cluster ${opts.name} runs without a real node; \`npm run cluster -- down --name ${opts.name}\` and start it again for one`,
      );
    return existing;
  }
  if (existing) {
    const { down } = await import("./down.ts");
    await down(opts.name, opts.log);
  }
  const binDir = ensureBinaries();
  const nodeBinDir = opts.realNode ? ensureNodeBinaries() : undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts, binDir, nodeBinDir);
    } catch (e) {
      const { down } = await import("./down.ts");
      await down(opts.name, () => {});
      if (attempt >= 3 || !String(e).includes("address already in use")) throw e;
      opts.log(`port collision, retrying (${attempt})`);
    }
  }
}

async function startOnce(
  opts: UpOptions,
  binDir: string,
  nodeBinDir: string | undefined,
): Promise<ClusterState> {
  const started = Date.now();
  const dir = clusterDir(opts.name);
  rmSync(dir, { recursive: true, force: true });
  const logs = join(dir, "logs");
  mkdirSync(logs, { recursive: true });
  mkdirSync(join(dir, "pki"));
  const ip = advertiseAddress();
  const pki = createPki(join(dir, "pki"), ip, opts.sandboxDomains ?? LOCAL_SANDBOX_DOMAINS);
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, picked] = await freePorts(6);
  const ports = {
    etcdClient: etcdClient!,
    etcdPeer: etcdPeer!,
    apiserver: apiserver!,
    controllerManager: controllerManager!,
    scheduler: scheduler!,
  };
  const hostPort = opts.hostPort ?? picked!;
  const adminToken = randomBytes(24).toString("hex");
  const callbackToken = randomBytes(24).toString("hex");
  writeFileSync(join(dir, "admin-token"), adminToken, { mode: 0o600 });
  const callbackTokenFile = join(dir, "callback-token");
  writeFileSync(callbackTokenFile, callbackToken, { mode: 0o600 });
  // The real node's kubelet is `system:node:<name>` in `system:nodes`, which the Node authorizer serves.
  const nodeToken = randomBytes(24).toString("hex");
  // The real node's snapshot agent: its node in its name, its group bound only to the agent's
  // ClusterRole and held to that node by the agent's admission policy (real-node/snapshot-agent.ts).
  const agentToken = randomBytes(24).toString("hex");
  writeFileSync(
    join(dir, "tokens.csv"),
    `${adminToken},admin,admin-uid,"system:masters"\n${nodeToken},system:node:${REAL_NODE_NAME},${REAL_NODE_NAME}-uid,"system:nodes"\n${agentToken},${snapshotAgentUser(REAL_NODE_NAME)},snapshot-agent-uid,"${SNAPSHOT_AGENT_GROUP}"\n`,
    { mode: 0o600 },
  );
  const server = `https://127.0.0.1:${ports.apiserver}`;
  const kubeconfig = join(dir, "kubeconfig");
  writeKubeconfig(kubeconfig, server, pki.caCert, adminToken);
  const auditWebhookUrl = opts.auditWebhookUrl ?? `https://127.0.0.1:${hostPort}/audit`;
  const callbacks = writeCallbackConfigs(dir, auditWebhookUrl, pki.caCert, callbackToken);
  const kwokConfig = join(dir, "kwok.yaml");
  writeKwokConfig(kwokConfig, KWOK_STAGES, opts.pullDelayMs, opts.backoffDelayMs);
  // kwok's simulated resource metrics, read through the node proxy at an address of this machine
  // the apiserver may proxy to (infra/cluster/kwok-metrics.ts); none on a machine without one.
  const kwokMetrics = await kwokMetricsWiring(kwokConfig, opts.log);
  const schedulerConfig = join(dir, "scheduler.yaml");
  writeFileSync(
    schedulerConfig,
    stringify({
      apiVersion: "kubescheduler.config.k8s.io/v1",
      kind: "KubeSchedulerConfiguration",
      clientConnection: { kubeconfig, qps: 500, burst: 1000 },
      leaderElection: { leaderElect: false },
    }),
  );

  const processes: ClusterState["processes"] = [];
  const running: { name: string; log: string; started: Started }[] = [];
  const run = (name: string, args: string[], bin = join(binDir, name)) => {
    const log = join(logs, `${name}.log`);
    const started = startDetached(bin, args, log);
    processes.push({ name, pid: started.pid, log });
    running.push({ name, log, started });
    writeState(state);
    return started;
  };
  const state: ClusterState = {
    name: opts.name,
    dir,
    server,
    kubeconfig,
    ports,
    hostPort,
    auditWebhookUrl,
    callbackTokenFile,
    caCert: pki.caCert,
    webhookCert: pki.webhookCert,
    webhookKey: pki.webhookKey,
    binDir,
    pullDelayMs: opts.pullDelayMs,
    nodes: Array.from({ length: opts.nodes }, (_, i) => `kwok-node-${i}`),
    processes,
    startedAt: new Date().toISOString(),
  };

  const etcdUrl = `http://127.0.0.1:${ports.etcdClient}`;
  const peerUrl = `http://127.0.0.1:${ports.etcdPeer}`;
  opts.log(`starting etcd on ${etcdUrl}`);
  // --unsafe-no-fsync: a throwaway test store; durability across power loss is not a goal here.
  run("etcd", [
    "--name=agentbox",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=agentbox=${peerUrl}`,
    "--unsafe-no-fsync",
    "--quota-backend-bytes=8589934592",
    "--log-level=warn",
  ]);
  await waitWhileRunning("etcd", running, async () => {
    const res = await fetch(`${etcdUrl}/health`);
    return res.ok;
  });

  opts.log(`starting kube-apiserver on ${server} (advertise ${ip})`);
  run(
    "kube-apiserver",
    apiserverArgs({ dir, etcdUrl, port: ports.apiserver, advertise: ip, pki, callbacks }),
  );
  await waitWhileRunning("kube-apiserver", running, async () => {
    const res = await httpsGet(`${server}/readyz`, pki.caCert, adminToken);
    return res.status === 200;
  });

  opts.log("starting kube-controller-manager, kube-scheduler and kwok");
  run("kube-controller-manager", [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${ports.controllerManager}`,
    "--leader-elect=false",
    `--service-account-private-key-file=${pki.saKey}`,
    `--root-ca-file=${pki.caCert}`,
    "--use-service-account-credentials=false",
    "--kube-api-qps=500",
    "--kube-api-burst=1000",
    "--concurrent-gc-syncs=50",
  ]);
  run("kube-scheduler", [
    `--config=${schedulerConfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    "--bind-address=127.0.0.1",
    `--secure-port=${ports.scheduler}`,
  ]);
  run("kwok", [
    `--kubeconfig=${kubeconfig}`,
    `--config=${kwokConfig}`,
    "--manage-all-nodes=false",
    "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
    "--cidr=127.32.0.0/16",
    ...kwokMetrics.args,
    "--node-lease-duration-seconds=40",
  ]);

  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of state.nodes) {
    await core.createNode({
      body: {
        metadata: {
          name,
          annotations: {
            "kwok.x-k8s.io/node": "fake",
            "node.alpha.kubernetes.io/ttl": "0",
            ...kwokMetrics.annotations(name),
          },
          labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", type: "kwok" },
        },
        spec: {},
      },
    });
  }
  await waitWhileRunning("kwok nodes Ready", running, async () => {
    const nodes = await core.listNode();
    return (
      nodes.items.length === state.nodes.length &&
      nodes.items.every((n) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
    );
  });
  // The service-account controller creating `default` proves the controller-manager is working;
  // pods cannot be admitted in a namespace before its default service account exists.
  await waitWhileRunning("the default service account", running, async () => {
    await core.readNamespacedServiceAccount({ name: "default", namespace: "default" });
    return true;
  });
  if (opts.realNode && nodeBinDir) {
    await startRealNode({
      clusterDir: dir,
      clusterName: opts.name,
      leaseDir: join(dir, "..", ".pod-networks"),
      nodeBinDir,
      server,
      caCert: pki.caCert,
      nodeToken,
      agentToken,
      core,
      run: (name, bin, args) => run(name, args, bin),
      wait: (what, check, timeoutMs) => waitWhileRunning(what, running, check, timeoutMs),
      record: (node) => {
        state.realNode = node;
        writeState(state);
      },
      publishImages: opts.realNode.publishImages,
      log: opts.log,
    });
    state.nodes.push(REAL_NODE_NAME);
  }
  writeState(state);
  opts.log(`cluster ${opts.name} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return state;
}
