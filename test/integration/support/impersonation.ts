// The admin's access to the run's apiserver as another identity (Kubernetes impersonation): for
// tests of what a write or a read is allowed as the host, an agent, or nobody in particular.
import type { KubeConfig } from "@kubernetes/client-node";
import { type KubeAccess, kubeconfigAccess } from "../../../hosts/node/kube-transport.ts";

/** withHeaders is the admin's access (`kc`) with extra request headers (impersonation). */
export function withHeaders(kc: KubeConfig, headers: Record<string, string | string[]>): KubeAccess {
  const base = kubeconfigAccess(kc);
  return {
    server: base.server,
    apply: async (options) => {
      await base.apply(options);
      options.headers = { ...(options.headers as Record<string, string>), ...headers };
    },
  };
}
