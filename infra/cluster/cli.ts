import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { down } from "./down.ts";
import { installCrds, registerWebhooks } from "./install.ts";
import { isOurs } from "./processes.ts";
import { nodeImages } from "./real-node/node-images.ts";
import { readState } from "./state.ts";
import { isHealthy, up } from "./up.ts";

const USAGE = `usage: npm run cluster -- <up|down|status|env|logs|crds|webhooks> [options]

  up       build the binaries if needed and start the local control plane
  down     stop its processes and remove its state
  status   show whether it runs, its processes and ports
  env      print shell exports (KUBECONFIG, AGENTBOX_KUBECONFIG)
  logs     print the last lines of every component log (--component NAME for one, --lines N)
  crds     install (server-side apply) crds/*.yaml and wait until they are served
  webhooks register the admission webhooks for our kinds (--url BASE, default: the host port)

options:
  --name NAME            cluster name (default: dev); clusters with other names run side by side
  --nodes N              kwok nodes to create (default: 3)
  --pull-delay MS        simulated image pull time in ms (default: 200)
  --backoff-delay MS     ErrImagePull -> ImagePullBackOff delay in ms (default: 1000)
  --host-port PORT       port the apiserver calls back for audit and admission (default: a free one)
  --audit-webhook-url U  where the apiserver sends audit events (default: https://127.0.0.1:<host port>/audit)
  --real-node            also start one real node (kubelet, containerd, runc, a local registry; needs root)
  --url BASE             with webhooks: base URL of the admission endpoints
`;

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: "string", default: "dev" },
      nodes: { type: "string", default: "3" },
      "pull-delay": { type: "string", default: "200" },
      "backoff-delay": { type: "string", default: "1000" },
      "host-port": { type: "string" },
      "audit-webhook-url": { type: "string" },
      url: { type: "string" },
      component: { type: "string" },
      lines: { type: "string", default: "40" },
      "real-node": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  const command = positionals[0];
  const log = (line: string) => console.error(`[cluster] ${line}`);
  const int = (flag: string, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0)
      throw new UsageError(`--${flag} must be a non-negative integer, got "${v}"`);
    return n;
  };
  switch (command) {
    case "up": {
      const state = await up({
        name: values.name,
        nodes: int("nodes", values.nodes)!,
        pullDelayMs: int("pull-delay", values["pull-delay"])!,
        backoffDelayMs: int("backoff-delay", values["backoff-delay"])!,
        hostPort: int("host-port", values["host-port"]),
        auditWebhookUrl: values["audit-webhook-url"],
        ...(values["real-node"] ? { realNode: nodeImages(log) } : {}),
        log,
      });
      console.log(`export KUBECONFIG=${state.kubeconfig}`);
      return 0;
    }
    case "down":
      await down(values.name, log);
      return 0;
    case "status": {
      const state = readState(values.name);
      if (!state) {
        console.log(`cluster ${values.name}: not running`);
        return 1;
      }
      const healthy = await isHealthy(state);
      console.log(`cluster ${state.name}: ${healthy ? "ready" : "NOT HEALTHY"}  ${state.server}`);
      console.log(`  kubeconfig  ${state.kubeconfig}`);
      console.log(`  host port   ${state.hostPort} (audit ${state.auditWebhookUrl})`);
      if (state.realNode) {
        const n = state.realNode;
        console.log(
          `  real node   ${n.name}: pods on ${n.network.subnet} (bridge ${n.network.bridge}), registry 127.0.0.1:${n.registryPort}, kubelet ${n.network.gateway}:${n.kubeletPort}`,
        );
      }
      for (const p of state.processes) {
        console.log(
          `  ${p.name.padEnd(24)} pid ${String(p.pid).padEnd(8)} ${isOurs(p.pid, state.dir) ? "running" : "gone"}`,
        );
      }
      return healthy ? 0 : 1;
    }
    case "env": {
      const state = readState(values.name);
      if (!state)
        throw new UsageError(`cluster ${values.name} is not running; start it with: npm run cluster -- up`);
      console.log(`export KUBECONFIG=${state.kubeconfig}`);
      console.log(`export AGENTBOX_KUBECONFIG=${state.kubeconfig}`);
      console.log(`export AGENTBOX_CLUSTER=${state.name}`);
      return 0;
    }
    case "logs": {
      const state = readState(values.name);
      if (!state) throw new UsageError(`cluster ${values.name} is not running`);
      const n = int("lines", values.lines)!;
      for (const p of state.processes) {
        if (values.component && p.name !== values.component) continue;
        console.log(`==> ${p.name} (${p.log})`);
        if (existsSync(p.log)) console.log(readFileSync(p.log, "utf8").split("\n").slice(-n).join("\n"));
      }
      return 0;
    }
    case "crds":
    case "webhooks": {
      const state = readState(values.name);
      if (!state)
        throw new UsageError(`cluster ${values.name} is not running; start it with: npm run cluster -- up`);
      const kc = new KubeConfig();
      kc.loadFromFile(state.kubeconfig);
      if (command === "crds") {
        console.log(`installed: ${(await installCrds(kc)).join(", ")}`);
      } else {
        const url = values.url ?? `https://127.0.0.1:${state.hostPort}`;
        await registerWebhooks(kc, url, state.caCert);
        console.log(`admission webhooks registered at ${url}/admission/{validate,mutate}`);
      }
      return 0;
    }
    default:
      console.error(USAGE);
      return values.help ? 0 : 2;
  }
}

class UsageError extends Error {}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e instanceof UsageError ? `error: ${e.message}` : e);
    process.exit(e instanceof UsageError ? 2 : 1);
  },
);
