import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { isOwnSandbox, type SandboxView } from "../../lib/claims/sandbox-view.ts";
import { trafficAccessToken } from "../../lib/claims/sealing.ts";
import { TRAFFIC_ANNOTATION, TRAFFIC_PRIVATE } from "../../lib/crd/keys.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * ownerTrafficToken is a private sandbox's traffic token for `tenant` when it is the sandbox's
 * owner and the host holds the sealing key; undefined for a public sandbox or anyone else (an
 * admin included), as ownerToken rules for the envd token: the token opens the sandbox's ports.
 */
export async function ownerTrafficToken(
  deps: Pick<HostDeps, "postStart">,
  tenant: Tenant,
  pod: V1Pod,
  view: SandboxView,
): Promise<string | undefined> {
  const keys = deps.postStart?.keys;
  const isPrivate = pod.metadata?.annotations?.[TRAFFIC_ANNOTATION] === TRAFFIC_PRIVATE;
  return keys && isPrivate && isOwnSandbox(view, tenant)
    ? trafficAccessToken(keys, view.sandboxId)
    : undefined;
}
