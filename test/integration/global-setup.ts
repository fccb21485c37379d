import { randomBytes } from "node:crypto";
import { appendFileSync, createWriteStream, existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import type { TestProject } from "vitest/node";
import { startHost } from "../../hosts/node/host.ts";
import { down } from "../../infra/cluster/down.ts";
import { installCrds, registerWebhooks } from "../../infra/cluster/install.ts";
import { nodeImages } from "../../infra/cluster/real-node/node-images.ts";
import type { RealNodeState } from "../../infra/cluster/real-node/real-node.ts";
import { clusterDir, readState } from "../../infra/cluster/state.ts";
import { up } from "../../infra/cluster/up.ts";
import { startKwokSnapshotAgent } from "../../infra/dev/envd/kwok-snapshot-agent.ts";
import { startEnvd } from "../../infra/dev/envd/server.ts";
import { TEST_SANDBOX_DOMAIN } from "./support/sandbox-domain.ts";
import { AGENT_TEST_NODES } from "./support/snapshot-agent-nodes.ts";

/** TestCluster is what integration tests learn about the control plane they run against. */
export interface TestCluster {
  name: string;
  kubeconfig: string;
  server: string;
  /** etcdUrl is the cluster's etcd (plain HTTP on loopback): a test may compact it to provoke 410 Gone. */
  etcdUrl: string;
  adminToken: string;
  caCert: string;
  webhookCert: string;
  webhookKey: string;
  callbackToken: string;
  hostPort: number;
  pullDelayMs: number;
  /** JSON lines, one audit EventList per line, as the host's audit sink accepted them. */
  auditLog: string;
  /** Bearer token of the test host's /functions routes. */
  functionsToken: string;
  /** Bearer token of the test host's /metrics. */
  metricsToken: string;
  /** envdPort is where every pod's (fake) envd listens, on the pod's loopback IP. */
  envdPort: number;
  /** envdRequestLog is the envd stand-in's log: one JSON line (RecordedRequest) per request it got. */
  envdRequestLog: string;
  /** postStartDeadlineSeconds: the test host releases sandboxes whose hooks fail this long. */
  postStartDeadlineSeconds: number;
  /** sealingKey is the test host's, so tests can derive envd tokens and run hooks themselves. */
  sealingKey: string;
  /** dataPlanePort is the test host's sandbox router, plain HTTP on 127.0.0.1. */
  dataPlanePort: number;
  /** dataPlaneTlsPort is the same router over TLS (h2, http/1.1; the webhook certificate, with `*.<domain>`). */
  dataPlaneTlsPort: number;
  /** realNode is the cluster's real node (kubelet, containerd), when it has one. */
  realNode?: RealNodeState;
}

declare module "vitest" {
  export interface ProvidedContext {
    cluster: TestCluster;
  }
}

/**
 * setup starts one local control plane for the whole integration run, or reuses the one named
 * by AGENTBOX_CLUSTER (started with `npm run cluster -- up --name NAME`, left running
 * afterwards). It installs the CRDs and runs the real host app (admission and audit webhooks)
 * on the cluster's callback port, registered as the cluster's admission webhooks, so every test
 * goes through the same admission path users do.
 */
export default async function setup(project: TestProject) {
  const reuse = process.env.AGENTBOX_CLUSTER;
  await removeOrphanedTestClusters();
  const name = reuse ?? `test-${process.pid}`;
  const log = (line: string) => console.error(`[cluster] ${line}`);
  const state = reuse
    ? readState(reuse)
    : await up({
        name,
        nodes: 3,
        pullDelayMs: 200,
        backoffDelayMs: 500,
        // The real node's files (test/integration/real-node-*.test.ts) run on it; kwok serves the rest.
        realNode: nodeImages(log),
        log,
      });
  if (!state)
    throw new Error(
      `AGENTBOX_CLUSTER=${reuse} names no running cluster; start it with npm run cluster -- up --name ${reuse}`,
    );
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await installCrds(kc);
  const callbackToken = readFileSync(state.callbackTokenFile, "utf8").trim();
  const auditLog = join(state.dir, "logs", "audit-events.jsonl");
  const logger = pino(
    { level: "debug" },
    createWriteStream(join(state.dir, "logs", "host.log"), { flags: "a" }),
  );
  const functionsToken = randomBytes(16).toString("hex");
  const metricsToken = randomBytes(16).toString("hex");
  const envdRequestLog = join(state.dir, "logs", "envd-requests.jsonl");
  const envd = await startEnvd({ requestLog: envdRequestLog, kubeconfig: kc });
  // The kwok nodes' snapshot agent (issue #39): no runtime there, so a pause commits the envd
  // stand-in's directory of the pod (infra/dev/envd/stand-in-committer.ts); the real node's
  // pauses are the containerd backend's.
  const snapshotAgent = startKwokSnapshotAgent(
    kc,
    envd.committer,
    logger.child({ component: "snapshot-agent-kwok" }),
    Object.values(AGENT_TEST_NODES),
  );
  // Long enough for envd to start in a real container after a swap (Node cold start: 2-4 s on a
  // loaded 2-core machine); tests of the deadline itself move their own clock past it.
  const postStartDeadlineSeconds = 20;
  const sealingKey = randomBytes(32).toString("hex");
  // The real host, with two test-only restrictions: no tick (tests drive the steps themselves)
  // and audit-triggered reconciles only for namespaces named audit-*, so background runs never
  // race the tests that count what their own runs did.
  const host = await startHost({
    kubeconfig: kc,
    callbackToken,
    adminToken: functionsToken,
    metricsToken,
    historyPath: join(state.dir, "test-history.sqlite"),
    listen: {
      host: "127.0.0.1",
      port: state.hostPort,
      certFile: state.webhookCert,
      keyFile: state.webhookKey,
    },
    tickSeconds: 0,
    tickConcurrency: 4,
    // The console's pool charts sample every second, so its browser test sees a claim at once.
    consoleSampleSeconds: 1,
    // Sandboxes' resource use every second, so the metrics tests see a series within seconds.
    usageSampleSeconds: 1,
    sealingKey,
    sandboxDomain: TEST_SANDBOX_DOMAIN,
    envdPort: envd.port,
    postStartDeadlineSeconds,
    log: logger,
    auditNamespacePrefix: "audit-",
    clusterId: "local",
    // Only the team "capped" is capped, so no other test meets the limit.
    teamLimits: { teams: { capped: 2 } },
    // The sandbox router on free ports: header routing on the plain one, TLS beside it.
    dataPlane: { plainPort: 0, tlsPort: 0 },
    // One short line per accepted event (what the audit test reads): whole batches carry every
    // pod's spec and grew the file past what one string can hold over a full run.
    onAuditEvents: (list) =>
      appendFileSync(
        auditLog,
        list.items
          .map((e) =>
            JSON.stringify({
              verb: e.verb,
              objectRef: e.objectRef,
              labels: (e as { responseObject?: { metadata?: { labels?: unknown } } }).responseObject?.metadata
                ?.labels,
            }),
          )
          .map((line) => `${line}\n`)
          .join(""),
      ),
  }).catch((e: unknown) => {
    throw new Error(
      `cannot serve the test host on port ${state.hostPort} (is \`npm start\` running against this cluster?): ${String(e)}`,
    );
  });
  await registerWebhooks(kc, `https://127.0.0.1:${state.hostPort}`, state.caCert);
  project.provide("cluster", {
    name: state.name,
    kubeconfig: state.kubeconfig,
    server: state.server,
    etcdUrl: `http://127.0.0.1:${state.ports.etcdClient}`,
    adminToken: readFileSync(join(state.dir, "admin-token"), "utf8").trim(),
    caCert: state.caCert,
    webhookCert: state.webhookCert,
    webhookKey: state.webhookKey,
    callbackToken,
    hostPort: state.hostPort,
    pullDelayMs: state.pullDelayMs,
    auditLog,
    functionsToken,
    metricsToken,
    envdPort: envd.port,
    envdRequestLog,
    postStartDeadlineSeconds,
    sealingKey,
    dataPlanePort: host.dataPlane?.ports.plain ?? 0,
    dataPlaneTlsPort: host.dataPlane?.ports.tls ?? 0,
    ...(state.realNode ? { realNode: state.realNode } : {}),
  });
  return async () => {
    await host.close();
    await snapshotAgent.stop();
    envd.server.close();
    if (!reuse) await down(name, log);
  };
}

/**
 * removeOrphanedTestClusters stops clusters of earlier test runs whose process is gone (a run
 * killed before its teardown), so they do not pile up on a developer machine or CI host.
 */
async function removeOrphanedTestClusters(): Promise<void> {
  const root = dirname(clusterDir("x"));
  if (!existsSync(root)) return;
  for (const name of readdirSync(root)) {
    const pid = /^test-(\d+)$/.exec(name)?.[1];
    if (!pid || pidAlive(Number(pid))) continue;
    await down(name, (line) => console.error(`[cluster] orphan ${line}`));
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
