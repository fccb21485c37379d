import type { Tenant } from "./api-keys.ts";

/**
 * historyScope is the filter a tenant's history queries always carry: its own team and user (an
 * admin: none, so it sees every record and may filter by any team or user).
 */
export function historyScope(tenant: Tenant): { team?: string; user?: string } {
  return tenant.admin ? {} : { team: tenant.team, user: tenant.user };
}
