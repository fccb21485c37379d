// `npm start`: the main job on a developer machine. It starts (or reuses) the local control
// plane, installs the CRDs, runs the Node host (admission and audit webhooks, manual triggers,
// reconcile ticks) over HTTPS, registers the webhooks, applies infra/samples and prints how to
// look at them. Ctrl-C stops the host; the cluster keeps running until `npm run cluster -- down`.

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import * as v from "valibot";
import {
  apply,
  installCrds,
  readYamlObjects,
  registerWebhooks,
  samplesDir,
} from "../../infra/cluster/install.ts";
import { nodeImages, realNodeSupported } from "../../infra/cluster/real-node/node-images.ts";
import { DEV_SANDBOX_DOMAIN } from "../../infra/cluster/sandbox-domains.ts";
import { up } from "../../infra/cluster/up.ts";
import { startKwokSnapshotAgent } from "../../infra/dev/envd/kwok-snapshot-agent.ts";
import { startEnvd } from "../../infra/dev/envd/server.ts";
import { realNodeDemo } from "../../infra/dev/real-node-demo.ts";
import { ENVD_PORT } from "../../lib/data-plane/sandbox-host.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { idleReleaseMode } from "../../lib/reconcile/idle-release.ts";
import { readActivitySource } from "./activity-settings.ts";
import { IdleReleaseSetting } from "./config.ts";
import { readPostgresHistory } from "./history-settings.ts";
import { startHost } from "./host.ts";
import { nodeKubeTransport } from "./kube-transport.ts";
import { readLocalSettings } from "./local-settings.ts";
import { hostLogger } from "./logger.ts";
import { installProcessPolicy } from "./process-policy.ts";

const logger = hostLogger(process.env.LOG_LEVEL ?? "info");
const name = process.env.AGENTBOX_CLUSTER ?? "dev";
const activity = readActivitySource(process.env);
// SQLite in the cluster's directory, unless AGENTBOX_HISTORY_URL names a PostgreSQL database.
const historyDatabase = readPostgresHistory(process.env);
// The tick, console, router, cluster and instance settings, validated as `npm run serve`'s are.
const local = readLocalSettings(process.env);
if (!activity.ok || !historyDatabase.ok || !local.ok) {
  const errors = [
    ...(activity.ok ? [] : activity.errors),
    ...(historyDatabase.ok ? [] : historyDatabase.errors),
    ...(local.ok ? [] : local.errors),
  ];
  console.error(`agentbox-functions: invalid configuration:\n- ${errors.join("\n- ")}`);
  process.exit(2);
}
const idleSetting = v.safeParse(IdleReleaseSetting, process.env.AGENTBOX_IDLE_RELEASE);
const idleRelease = idleSetting.success
  ? // npm start always runs the router, an activity source of its own.
    idleReleaseMode(idleSetting.output, true, "AGENTBOX_ACTIVITY_SOURCE_URL")
  : { ok: false as const, error: idleSetting.issues[0]?.message ?? "invalid" };
if (!idleRelease.ok) {
  console.error(`agentbox-functions: invalid configuration:\n- AGENTBOX_IDLE_RELEASE: ${idleRelease.error}`);
  process.exit(2);
}

// A real node (kubelet, containerd, runc) beside the kwok nodes where this process can run one
// (root on Linux); AGENTBOX_REAL_NODE=0 leaves it out.
const withRealNode = realNodeSupported() && process.env.AGENTBOX_REAL_NODE !== "0";
const state = await up({
  name,
  nodes: 3,
  pullDelayMs: 200,
  backoffDelayMs: 1000,
  ...(withRealNode ? { realNode: nodeImages((line) => logger.info(line)) } : {}),
  log: (line) => logger.info(line),
});
const kc = new KubeConfig();
kc.loadFromFile(state.kubeconfig);
logger.info({ crds: await installCrds(kc) }, "CRDs installed");

// The operators' token for /functions, kept with the cluster so it survives host restarts.
const adminTokenFile = join(state.dir, "functions-admin-token");
if (!existsSync(adminTokenFile))
  writeFileSync(adminTokenFile, randomBytes(24).toString("hex"), { mode: 0o600 });

// The key that seals claims' env vars and derives envd tokens, also kept with the cluster.
const sealingKeyFile = join(state.dir, "sealing-key");
if (!existsSync(sealingKeyFile))
  writeFileSync(sealingKeyFile, randomBytes(32).toString("hex"), { mode: 0o600 });

// A stand-in for envd in every kwok pod (infra/dev/envd/), so post-start hooks (env vars, every
// E2B create) succeed and the E2B SDK's commands and files run in a directory per sandbox.
// It takes envd's own port when free, so the real node's containers (whose envd listens there)
// and the kwok pods agree on where the router sends envd traffic.
const envd = await startEnvd({ kubeconfig: kc, port: ENVD_PORT }).catch((e: NodeJS.ErrnoException) => {
  if (e.code !== "EADDRINUSE") throw e;
  logger.warn(
    `port ${ENVD_PORT} is taken: the envd stand-in takes another, and the real node's sandboxes need ENVD_PORT set to it`,
  );
  return startEnvd({ kubeconfig: kc });
});
// Pauses of kwok sandboxes commit the stand-in's directory of the pod (the real node's agent, if
// any, was started with it by `cluster up`).
const snapshotAgent = startKwokSnapshotAgent(
  kc,
  envd.committer,
  logger.child({ component: "snapshot-agent-kwok" }),
);

// The sandbox router: `*.localhost` resolves to loopback on most systems, so the answers' domain
// points at this machine; the SDK reaches the router by header routing (E2B_SANDBOX_URL), or by
// name over TLS with AGENTBOX_DATA_PLANE_TLS_PORT (the cluster's certificate covers
// `*.sandbox.localhost` for clusters made since it does; the SDK must reach that port as 443).
const settings = local.value;
const sandboxDomain = settings.sandboxDomain ?? DEV_SANDBOX_DOMAIN;

const host = await startHost({
  kubeconfig: kc,
  callbackToken: readFileSync(state.callbackTokenFile, "utf8").trim(),
  adminToken: readFileSync(adminTokenFile, "utf8").trim(),
  historyPath: process.env.AGENTBOX_HISTORY_PATH ?? join(state.dir, "history.sqlite"),
  ...(historyDatabase.value ? { historyDatabase: historyDatabase.value } : {}),
  listen: { host: "127.0.0.1", port: state.hostPort, certFile: state.webhookCert, keyFile: state.webhookKey },
  tickSeconds: settings.tickSeconds,
  tickConcurrency: 8,
  sealingKey: readFileSync(sealingKeyFile, "utf8").trim(),
  envdPort: envd.port,
  sandboxDomain,
  dataPlane: settings.dataPlane,
  consoleSampleSeconds: settings.consoleSampleSeconds,
  ...(settings.instanceId ? { instanceId: settings.instanceId } : {}),
  // The samples' Env segment is "local"; AGENTBOX_CLUSTER_ID names another.
  clusterId: settings.clusterId ?? "local",
  adoptPools: settings.adoptPools,
  idleRelease: idleRelease.mode,
  log: logger,
  ...(activity.value ? { activitySource: activity.value } : {}),
});
const baseUrl = `https://127.0.0.1:${state.hostPort}`;
await registerWebhooks(kc, baseUrl, state.caCert);
logger.info({ url: baseUrl }, "host listening; admission webhooks registered");

// The API keys live in agentbox-system (the api-key command and the API read them there).
await apply(kc, [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "agentbox-system" } }]);
const samples = [
  ...readYamlObjects(samplesDir),
  ...(state.realNode ? readYamlObjects(join(samplesDir, "real-node")) : []),
];
await apply(kc, samples);
logger.info({ samples: samples.map((s) => `${s.kind}/${s.metadata?.name}`) }, "samples applied");

const ca = state.caCert;
const routerUrl = `http://127.0.0.1:${host.dataPlane?.ports.plain ?? settings.dataPlane.plainPort}`;
console.log(`
agentbox-functions is running against cluster "${name}" (${state.server}).

Look around:
  export KUBECONFIG=${state.kubeconfig}
  kubectl get sandboxtemplates,sandboxpools,sandboxenvs -A     # short names: sbt, sbp, sbe
  kubectl get pods -n agentbox-demo -L agentbox.navix.sh/sandbox-phase

Claim a sandbox:
  1. Make an API key (the sample template is visible to team research):
       npm run agentbox -- api-key create --team research --user alice --cluster ${name}
       export AGENTBOX_KEY=<the key it printed>
  2. With curl (wait: answer once it runs), then release it:
       curl --cacert ${ca} -H "X-API-Key: $AGENTBOX_KEY" -H 'content-type: application/json' \\
            -d '{"pool":"agentbox-demo/python","wait":true}' ${baseUrl}/v1/sandboxes
       curl --cacert ${ca} -H "X-API-Key: $AGENTBOX_KEY" -X DELETE ${baseUrl}/v1/sandboxes/<sandboxId>
  3. With the e2b SDK, unmodified:
       E2B_API_URL=${baseUrl}/e2b E2B_API_KEY=$AGENTBOX_KEY NODE_EXTRA_CA_CERTS=${ca} \\
         npm run -s demo:e2b -- python-3-12
  4. Commands and files through the sandbox router (${routerUrl}, domain ${sandboxDomain}):
       export E2B_API_URL=${baseUrl}/e2b E2B_API_KEY=$AGENTBOX_KEY NODE_EXTRA_CA_CERTS=${ca}
       export E2B_SANDBOX_URL=${routerUrl}    # header routing: the SDK names the sandbox in headers
       node_modules/.bin/node --input-type=module -e "import { Sandbox } from 'e2b';
         const sbx = await Sandbox.create('python-3-12');
         console.log((await sbx.commands.run('echo hi')).stdout); await sbx.kill();"

Run the steps by hand:
  npm run agentbox -- reconcile agentbox-demo/python --cluster ${name}        # a pool
  npm run agentbox -- reconcile-env agentbox-demo/python --cluster ${name}    # an Env (segment "local")
  curl --cacert ${ca} -H "Authorization: Bearer $(cat ${adminTokenFile})" \\
       -X POST "${baseUrl}/functions/reconcile?namespace=agentbox-demo&pool=python"

Console: ${baseUrl}/ui   (sign in with an API key, or the admin token: cat ${adminTokenFile})
  The browser will not know the local CA: accept the warning, or trust ${ca}.
Metrics (Prometheus text, both threads merged; the admin token opens them):
  curl --cacert ${ca} -H "Authorization: Bearer $(cat ${adminTokenFile})" ${baseUrl}/metrics

Ctrl-C stops this host; npm run cluster -- down stops the cluster.
`);

// The real node's proof, once its sample pool has a warm pod: a command in a real container.
if (state.realNode) {
  realNodeDemo({
    kube: new KubeClient(nodeKubeTransport(kc)),
    apiKeys: { namespace: "agentbox-system", name: "agentbox-api-keys" },
    baseUrl,
    routerUrl,
    caCert: ca,
  }).then(
    (out) =>
      console.log(
        `Real containers (node ${state.realNode?.name}, pods on ${state.realNode?.network.subnet}): the e2b SDK in the busybox-real sample:\n${out}\n`,
      ),
    (e: unknown) => logger.warn({ err: String(e) }, "the real node's demo command failed"),
  );
}

installProcessPolicy(process, logger, () => host.close());
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    logger.info({ signal }, "stopping");
    void host.close().then(async () => {
      await snapshotAgent.stop();
      envd.server.close();
      process.exit(0);
    });
  });
}
