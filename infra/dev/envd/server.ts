/**
 * server.ts starts the envd stand-in for every kwok pod, on the host (the integration tests, and
 * `npm start`, so the E2B SDK's commands and files work on the local cluster). The cluster gives
 * pods loopback IPs (127.32.0.0/16), so one server on 0.0.0.0 receives what is sent to
 * podIP:port and tells pods apart by the address it was called on (serve.ts, pods.ts). With a
 * kubeconfig it reads each pod's container instance from the apiserver (pod-instances.ts), so a
 * restarted container meets a fresh envd. The in-container envd (container-main.ts) starts
 * serve.ts directly and never loads this module's Kubernetes client.
 */
import type { Server } from "node:http";
import type { KubeConfig } from "@kubernetes/client-node";
import { nodeKubeTransport } from "../../../hosts/node/kube-transport.ts";
import { podInstances } from "./pod-instances.ts";
import { type ServeOptions, serveEnvd } from "./serve.ts";

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

/** startEnvd starts the stand-in; closing the server ends every sandbox and removes their files. */
export async function startEnvd(options: EnvdOptions = {}): Promise<{ port: number; server: Server }> {
  const { kubeconfig, ...rest } = options;
  const { port, server } = await serveEnvd({
    ...rest,
    ...(kubeconfig ? { instanceOf: podInstances(nodeKubeTransport(kubeconfig)) } : {}),
  });
  return { port, server };
}
