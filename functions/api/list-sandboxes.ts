import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { matchesMetadata, type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import {
  SANDBOX_ID_LABEL,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  TEAM_LABEL,
  USER_LABEL,
} from "../../lib/crd/keys.ts";
import { isContinueRejected } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

export interface ListFilter {
  pool?: string;
  phase?: string;
  metadata?: Record<string, string>;
  limit: number;
  continue?: string;
}

/**
 * ContinueRejected is a list whose `continue` token the apiserver refused: garbled, from another
 * list, or expired. Each surface answers it as its 400 naming its own parameter (continue,
 * nextToken), never as a server error.
 */
export class ContinueRejected extends Error {
  /** expired: the token was valid once; listing again from the first page helps. */
  readonly expired: boolean;

  constructor(expired: boolean) {
    super(
      expired
        ? "the token has expired (the list changed too much since it was issued); list again from the first page"
        : "not a token of this list; pass the token a previous page of the same list answered",
    );
    this.name = "ContinueRejected";
    this.expired = expired;
  }
}

/**
 * listSandboxes lists the tenant's sandboxes (admins: everyone's). Ownership, pool and phase are
 * label selectors the apiserver evaluates; pagination is the apiserver's own (limit/continue), so
 * a page may hold fewer matches than the limit when a metadata filter removes some. A token the
 * apiserver refuses throws ContinueRejected.
 */
export async function listSandboxes(
  deps: HostDeps,
  tenant: Tenant,
  filter: ListFilter,
): Promise<{ sandboxes: SandboxView[]; pods: V1Pod[]; continue?: string }> {
  const selector = [SANDBOX_ID_LABEL];
  if (!tenant.admin) selector.push(`${TEAM_LABEL}=${tenant.team}`, `${USER_LABEL}=${tenant.user}`);
  const [namespace, poolName] = filter.pool ? filter.pool.split("/") : [];
  if (poolName) selector.push(`${SANDBOX_POOL_LABEL}=${poolName}`);
  if (filter.phase) selector.push(`${SANDBOX_PHASE_LABEL}=${filter.phase}`);
  const page = await deps.kube
    .listPods(namespace, selector.join(","), {
      limit: filter.limit,
      ...(filter.continue ? { continue: filter.continue } : {}),
    })
    .catch((e: unknown) => {
      if (filter.continue && isContinueRejected(e)) throw new ContinueRejected(e.status === 410);
      throw e;
    });
  const now = deps.now();
  const pods = page.items.filter((p) => !p.metadata?.deletionTimestamp);
  const sandboxes = pods
    .map((p) => sandboxView(p, now))
    .filter(
      (v): v is SandboxView => v !== undefined && (!filter.metadata || matchesMetadata(v, filter.metadata)),
    );
  return { sandboxes, pods, ...(page.continue ? { continue: page.continue } : {}) };
}
