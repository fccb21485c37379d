// `npm start`: the main job on a developer machine. It starts (or reuses) the local control
// plane, installs the CRDs, serves the admission and audit webhooks over HTTPS, registers the
// webhooks, applies infra/samples and prints how to look at them. Ctrl-C stops the host; the
// cluster keeps running until `npm run cluster -- down`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import {
  apply,
  installCrds,
  readYamlObjects,
  registerWebhooks,
  samplesDir,
} from "../../infra/cluster/install.ts";
import { up } from "../../infra/cluster/up.ts";
import { createApp } from "../app.ts";
import { serveHttps } from "./serve.ts";

const logger = pino({
  level: process.env.LOG_LEVEL ?? "info",
  redact: ["req.headers.authorization", "*.token"],
});
const name = process.env.AGENTBOX_CLUSTER ?? "dev";

const state = await up({
  name,
  nodes: 3,
  pullDelayMs: 200,
  backoffDelayMs: 1000,
  log: (line) => logger.info(line),
});
const kc = new KubeConfig();
kc.loadFromFile(state.kubeconfig);
const crds = await installCrds(kc);
logger.info({ crds }, "CRDs installed");

const callbackToken = readFileSync(state.callbackTokenFile, "utf8").trim();
const server = await serveHttps(
  createApp({ callbackToken, logger }),
  state.hostPort,
  state.webhookCert,
  state.webhookKey,
);
const baseUrl = `https://127.0.0.1:${state.hostPort}`;
await registerWebhooks(kc, baseUrl, state.caCert);
logger.info({ url: baseUrl }, "admission webhooks registered; audit sink listening");

const samples = readYamlObjects(samplesDir);
await apply(kc, samples);
logger.info({ samples: samples.map((s) => `${s.kind}/${s.metadata?.name}`) }, "samples applied");

console.log(`
agentbox-functions is running against cluster "${name}" (${state.server}).

  export KUBECONFIG=${state.kubeconfig}
  kubectl get sandboxtemplates,sandboxpools,sandboxenvs -A     # short names: sbt, sbp, sbe
  kubectl get sbp -n agentbox-demo -o yaml
  kubectl apply -f ${join("infra", "samples")}                  # goes through the admission webhooks

Ctrl-C stops this host; npm run cluster -- down stops the cluster.
`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    logger.info({ signal }, "stopping");
    void server.close().then(() => process.exit(0));
  });
}
