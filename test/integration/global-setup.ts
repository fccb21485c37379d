import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { down } from "../../infra/cluster/down.ts";
import { readState } from "../../infra/cluster/state.ts";
import { up } from "../../infra/cluster/up.ts";

/** TestCluster is what integration tests learn about the control plane they run against. */
export interface TestCluster {
  name: string;
  kubeconfig: string;
  server: string;
  adminToken: string;
  caCert: string;
  webhookCert: string;
  webhookKey: string;
  callbackToken: string;
  hostPort: number;
  pullDelayMs: number;
}

declare module "vitest" {
  export interface ProvidedContext {
    cluster: TestCluster;
  }
}

/**
 * setup starts one local control plane for the whole integration run, or reuses the one named
 * by AGENTBOX_CLUSTER (started with `npm run cluster -- up --name NAME`), which is then left
 * running afterwards.
 */
export default async function setup(project: TestProject) {
  const reuse = process.env.AGENTBOX_CLUSTER;
  const name = reuse ?? `test-${process.pid}`;
  const log = (line: string) => console.error(`[cluster] ${line}`);
  const state = reuse
    ? readState(reuse)
    : await up({ name, nodes: 3, pullDelayMs: 200, backoffDelayMs: 500, log });
  if (!state)
    throw new Error(
      `AGENTBOX_CLUSTER=${reuse} names no running cluster; start it with npm run cluster -- up --name ${reuse}`,
    );
  project.provide("cluster", {
    name: state.name,
    kubeconfig: state.kubeconfig,
    server: state.server,
    adminToken: readFileSync(join(state.dir, "admin-token"), "utf8").trim(),
    caCert: state.caCert,
    webhookCert: state.webhookCert,
    webhookKey: state.webhookKey,
    callbackToken: readFileSync(state.callbackTokenFile, "utf8").trim(),
    hostPort: state.hostPort,
    pullDelayMs: state.pullDelayMs,
  });
  return async () => {
    if (!reuse) await down(name, log);
  };
}
