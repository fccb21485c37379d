// Which tenants may see (list, and create sandboxes from) a SandboxTemplate. The rules are
// agentbox's TemplateVisibility: a template with no rules is public, rules are ORed, and inside
// a rule team and users are ANDed with an empty field matching anyone.
import type { TemplateVisibility } from "../crd/sandbox-template.ts";
import type { Tenant } from "./api-keys.ts";

/**
 * templateVisibleTo tells whether a tenant may see a template with this visibility. Admins see
 * every template. No visibility, or no rules, means public. Otherwise the tenant must match at
 * least one rule: its team equals the rule's team (absent or "" matches any team) and its user
 * is among the rule's users (absent or empty list matches any user), so a rule with neither
 * team nor users matches every tenant, as in agentbox.
 */
export function templateVisibleTo(visibility: TemplateVisibility | undefined, tenant: Tenant): boolean {
  if (tenant.admin) return true;
  const rules = visibility?.rules ?? [];
  if (rules.length === 0) return true;
  return rules.some((rule) => {
    const teamMatches = !rule.team || rule.team === tenant.team;
    const users = rule.users ?? [];
    const userMatches = users.length === 0 || users.includes(tenant.user);
    return teamMatches && userMatches;
  });
}
