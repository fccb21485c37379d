import type { Tenant } from "../../lib/claims/api-keys.ts";
import {
  isOwnSandbox,
  type SandboxAccess,
  type SandboxView,
  withAccess,
} from "../../lib/claims/sandbox-view.ts";
import { envdAccessToken } from "../../lib/claims/sealing.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * ownerToken is sandbox `view`'s envd access token for `tenant`, when it is the sandbox's owner
 * (isOwnSandbox) and the host holds the sealing key; undefined otherwise. One rule for every
 * answer, native and E2B: an admin key sees, retimes and kills any tenant's sandbox, but the
 * token, which runs commands and reads files inside it, goes to its owner only.
 */
export async function ownerToken(
  deps: Pick<HostDeps, "postStart">,
  tenant: Tenant,
  view: SandboxView,
): Promise<string | undefined> {
  const keys = deps.postStart?.keys;
  return keys && isOwnSandbox(view, tenant) ? envdAccessToken(keys, view.sandboxId) : undefined;
}

/**
 * viewWithAccess is the native answer for a sandbox `tenant` sees (its GET, its create): the
 * view with `access`, its URLs under `domain` and, to its owner, the envd token (withAccess).
 */
export async function viewWithAccess(
  deps: Pick<HostDeps, "postStart">,
  tenant: Tenant,
  view: SandboxView,
  domain: string | undefined,
): Promise<SandboxView & { access?: SandboxAccess }> {
  return withAccess(view, domain, await ownerToken(deps, tenant, view));
}
