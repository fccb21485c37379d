// RefreshMember (seed 002, EnvClusterMember: "Template upgrades do NOT auto-propagate into Spec;
// an explicit RefreshMember API ... is the way to align an existing member with a newer Template
// revision"): on an operator's request, one member pool is re-rendered from its template's
// current revision with the Env's overrides and the member's config on top, and records that
// revision, so the Env's runs render it from there on (ADR 0033).
import { type Action, isTerminating, poolTarget, testVersion } from "../kube/action.ts";
import { isSnapshotMember, localMembers } from "../membership/env-members.ts";
import { foreignMemberPool, ownedBy } from "../membership/env-ownership.ts";
import { memberDrift } from "./member-drift.ts";
import { currentRevision, describeRevision } from "./member-revision.ts";
import type { EnvSnapshot } from "./plan-env.ts";
import { renderMember } from "./render-member.ts";

/**
 * MemberRefreshPlan is a refresh's write (none when the pool is at the template's current
 * revision already), or why there is none: `missing` when the Env has no such member (an unknown
 * name), else the refresh is refused (it cannot be done to that member now).
 */
export type MemberRefreshPlan =
  | { ok: true; actions: Action[]; note: string }
  | { ok: false; missing: boolean; reason: string };

const refused = (reason: string): MemberRefreshPlan => ({ ok: false, missing: false, reason });

/**
 * planMemberRefresh plans the refresh of member `name` of the Env's segment for clusterId:
 * refused for a snapshot member (stamped from its spec, it has no template revision), a template
 * that is missing or not at the pinned version, a pool this Env does not own or that is being
 * deleted, or a member the catalog cannot size. A member without a pool yet has nothing to
 * refresh (its Env run creates it from the current revision). Otherwise the pool is patched,
 * under a resourceVersion test, to the render from the current revision (its spec.replicas aside:
 * those follow the Env's runs), with a MemberRefreshed Event; a pool already there gets no write.
 */
export function planMemberRefresh(snapshot: EnvSnapshot, name: string, clusterId: string): MemberRefreshPlan {
  const { env, pools, template, pullSecret, catalog } = snapshot;
  const envKey = `${env.metadata?.namespace}/${env.metadata?.name}`;
  const member = localMembers(env, clusterId).find((m) => m.name === name);
  if (!member)
    return {
      ok: false,
      missing: true,
      reason: `SandboxEnv "${envKey}" has no member "${name}" in cluster segment "${clusterId}"`,
    };
  if (isTerminating(env)) return refused(`SandboxEnv "${envKey}" is being deleted`);
  if (isSnapshotMember(member))
    return refused(
      `member "${name}" is snapshot-based: its spec carries a pod template, stamped verbatim, so it has no template revision to refresh; change its spec instead`,
    );
  const ref = env.spec.templateRef;
  if (!template) return refused(`SandboxTemplate "${ref.name}" does not exist`);
  const current = currentRevision(env, template);
  if (!current)
    return refused(
      `SandboxTemplate "${ref.name}" is at version "${template.spec.version ?? ""}", the Env pins "${ref.version}"`,
    );
  const pool = pools.find((p) => p.metadata?.name === name);
  if (!pool)
    return {
      ok: true,
      actions: [],
      note: `member "${name}" has no pool yet: its Env run creates it from ${describeRevision(current)}`,
    };
  if (!ownedBy(pool, env)) return refused(foreignMemberPool(pool, env) ?? "its pool is not this Env's");
  if (isTerminating(pool)) return refused(`the pool of member "${name}" is being deleted`);
  const rendered = renderMember(env, member, {
    template,
    pullSecret,
    catalog: catalog ?? undefined,
    revision: current,
  });
  if (!rendered.complete) return refused(rendered.problem ?? `member "${name}" cannot be rendered`);
  const drift = memberDrift(pool, { ...rendered, owned: rendered.owned.filter((f) => f !== "replicas") });
  const at = `SandboxTemplate "${ref.name}" ${describeRevision(current)}`;
  if (drift.ops.length === 0) return { ok: true, actions: [], note: `already at ${at}` };
  const note = `refreshed from ${at}, the Env's overrides and the member's config re-applied (${drift.changed.join(", ")})`;
  return {
    ok: true,
    note,
    actions: [
      {
        target: poolTarget(pool),
        why: note,
        write: { op: "patch", patch: [testVersion(pool), ...drift.ops] },
        event: { type: "Normal", reason: "MemberRefreshed", action: "RefreshMember", note },
      },
    ],
  };
}
