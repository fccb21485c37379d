import type { LifecycleEvent } from "../history/lifecycle-event.ts";
import type { SandboxRecord } from "../history/record.ts";
import type { Tenant } from "./api-keys.ts";

/**
 * historyScope is the filter a tenant's history queries always carry: its own team and user (an
 * admin: none, so it sees every record and may filter by any team or user).
 */
export function historyScope(tenant: Tenant): { team?: string; user?: string } {
  return tenant.admin ? {} : { team: tenant.team, user: tenant.user };
}

/**
 * mayReadRecord tells whether a tenant may see one history record (an ended sandbox, its series):
 * the same rule as historyScope's filter, for a record read by its key, so a sandbox page and a
 * metrics read never show a record the history list would not. Callers answer another tenant's
 * record exactly like a missing one.
 */
export function mayReadRecord(tenant: Tenant, record: Pick<SandboxRecord, "team" | "user">): boolean {
  const scope = historyScope(tenant);
  return scope.team === undefined || (record.team === scope.team && record.user === scope.user);
}

/**
 * mayReadHistory tells whether the tenant may see a sandbox's history: there is something (its
 * record, or an event) and every part of it is the tenant's (mayReadRecord, the list's rule), so
 * a tenant learns nothing of another's sandbox, not even that it exists.
 */
export function mayReadHistory(
  tenant: Tenant,
  record: SandboxRecord | undefined,
  events: readonly LifecycleEvent[],
): boolean {
  const parts = record ? [record, ...events] : events;
  return parts.length > 0 && parts.every((p) => mayReadRecord(tenant, p));
}
