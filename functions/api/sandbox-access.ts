import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import {
  isOwnSandbox,
  type SandboxDetail,
  type SandboxView,
  sandboxDetail,
} from "../../lib/claims/sandbox-view.ts";
import { envdAccessToken } from "../../lib/claims/sealing.ts";
import { incarnationOf } from "../../lib/lifecycle/incarnation.ts";
import type { HostDeps } from "../host-deps.ts";
import { ownerTrafficToken } from "./traffic-access.ts";

/**
 * ownerToken is sandbox `view`'s envd access token for `tenant`, when it is the sandbox's owner
 * (isOwnSandbox) and the host holds the sealing key; undefined otherwise. One rule for every
 * answer, native and E2B: an admin key sees, retimes and kills any tenant's sandbox, but the
 * token, which runs commands and reads files inside it, goes to its owner only. It is derived for
 * the pod's incarnation: a resumed sandbox's envd has a new token (ADR 0045).
 */
export async function ownerToken(
  deps: Pick<HostDeps, "postStart">,
  tenant: Tenant,
  pod: V1Pod,
  view: SandboxView,
): Promise<string | undefined> {
  const keys = deps.postStart?.keys;
  return keys && isOwnSandbox(view, tenant)
    ? envdAccessToken(keys, view.sandboxId, incarnationOf(pod))
    : undefined;
}

/**
 * viewWithAccess is the native answer for a sandbox `tenant` sees (its GET, its create), read
 * from its `pod` (sandboxDetail): the view with its network settings and `access`: its URLs under
 * `domain` and, to its owner only (ownerToken, ownerTrafficToken), envd's token and, when its
 * ports are private, its traffic token. The create's answer and the GET are where the owner
 * learns them; an admin key looking at another tenant's sandbox gets neither.
 */
export async function viewWithAccess(
  deps: Pick<HostDeps, "postStart">,
  tenant: Tenant,
  pod: V1Pod,
  view: SandboxView,
  domain: string | undefined,
): Promise<SandboxDetail> {
  const [envd, traffic] = await Promise.all([
    ownerToken(deps, tenant, pod, view),
    ownerTrafficToken(deps, tenant, pod, view),
  ]);
  return sandboxDetail(pod, view, domain, { envdAccessToken: envd, trafficAccessToken: traffic });
}
