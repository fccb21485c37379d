/**
 * server.ts starts the envd stand-in for every kwok pod, on the host (the integration tests, and
 * `npm start`, so the E2B SDK's commands and files work on the local cluster). The cluster gives
 * pods loopback IPs (127.32.0.0/16), so one server on 0.0.0.0 receives what is sent to
 * podIP:port and tells pods apart by the address it was called on (serve.ts, pods.ts). With a
 * kubeconfig it reads each pod's container instance from the apiserver (pod-instances.ts), so a
 * restarted container meets a fresh envd. Its `committer` is the snapshot agent's backend for
 * the kwok nodes (stand-in-committer.ts): a pod's directory is what its snapshot holds, and a pod
 * running a snapshot image starts over a copy of it. The in-container envd (container-main.ts)
 * starts serve.ts directly and never loads this module's Kubernetes client.
 */
import type { Server } from "node:http";
import type { KubeConfig } from "@kubernetes/client-node";
import type { Committer } from "../../../functions/snapshots/committer.ts";
import { nodeKubeTransport } from "../../../hosts/node/kube-transport.ts";
import { podInstances } from "./pod-instances.ts";
import { type ServeOptions, serveEnvd } from "./serve.ts";
import { standInCommitter } from "./stand-in-committer.ts";

export type { RecordedRequest } from "./serve.ts";

/** EnvdOptions bound what the host-side stand-in accepts; every field has a default. */
export interface EnvdOptions extends Omit<ServeOptions, "instanceOf" | "root"> {
  /**
   * kubeconfig lets the stand-in see a pod's container restart (pod-instances.ts), so the next
   * claim's /init meets a fresh envd, as on a real pod. Without it a pod's envd never restarts:
   * a second token on the same pod IP is refused.
   */
  kubeconfig?: KubeConfig;
}

/** StartedEnvd is a running stand-in: its port, its server, and the committer over its snapshots. */
export interface StartedEnvd {
  port: number;
  server: Server;
  committer: Committer;
}

/**
 * startEnvd starts the stand-in; closing the server ends every sandbox and removes their files
 * (and its snapshots, unless options.snapshotDir named where to keep them).
 */
export async function startEnvd(options: EnvdOptions = {}): Promise<StartedEnvd> {
  const { kubeconfig, ...rest } = options;
  const { port, server, snapshots } = await serveEnvd({
    ...rest,
    ...(kubeconfig ? { instanceOf: podInstances(nodeKubeTransport(kubeconfig)) } : {}),
  });
  if (!snapshots) throw new Error("the envd stand-in started without its snapshot store");
  return { port, server, committer: standInCommitter(snapshots) };
}
