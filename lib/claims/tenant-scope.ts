// Which pods a tenant may see as its sandboxes: admins every one, anyone else only the pods
// labelled with its team and user. Said once, as a selector for the apiserver and as a check of
// what came back.
import { TEAM_LABEL, USER_LABEL } from "../crd/keys.ts";
import type { Tenant } from "./api-keys.ts";

/**
 * ownedBy: admins own everything; a tenant owns pods (and paused sandboxes' snapshots) with its
 * team and user labels.
 */
export function ownedBy(pod: { metadata?: { labels?: Record<string, string> } }, tenant: Tenant): boolean {
  if (tenant.admin) return true;
  const labels = pod.metadata?.labels ?? {};
  return labels[TEAM_LABEL] === tenant.team && labels[USER_LABEL] === tenant.user;
}

/**
 * tenantSelector is ownedBy as label selector terms (none for an admin), so a list returns only
 * the tenant's pods. Team and user are label values (the key entry's schema checks), so they
 * cannot change the selector's meaning.
 */
export function tenantSelector(tenant: Tenant): string[] {
  return tenant.admin ? [] : [`${TEAM_LABEL}=${tenant.team}`, `${USER_LABEL}=${tenant.user}`];
}
