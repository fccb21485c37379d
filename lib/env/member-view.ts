// Which template revision each member renders from, and whether it is behind its template (ADR
// 0033): a member with a pool renders from the revision its pool records, so a template edit
// reaches it only through RefreshMember (seed 002: "Template upgrades do NOT auto-propagate").
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { isTerminating } from "../kube/action.ts";
import { type EnvClusterMember, isSnapshotMember } from "../membership/env-members.ts";
import { ownedBy } from "../membership/env-ownership.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import type { MemberView } from "./member-report.ts";
import {
  currentRevision,
  derivedRevision,
  describeRevision,
  matchesRef,
  RECORD_ANNOTATIONS,
  recordedRevision,
  sameRevision,
  type TemplateRevision,
} from "./member-revision.ts";
import { type MemberInputs, type RenderedMember, renderMember } from "./render-member.ts";

/** withoutRecord is a render's annotations minus the revision record. */
function withoutRecord(annotations: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(annotations).filter(([k]) => !RECORD_ANNOTATIONS.includes(k)));
}

/** sameRender: two renders give the member pool the same spec, labels and annotations (the record aside). */
function sameRender(a: RenderedMember, b: RenderedMember): boolean {
  return (
    jsonEqual(a.spec, b.spec) &&
    jsonEqual(a.labels, b.labels) &&
    jsonEqual(withoutRecord(a.annotations), withoutRecord(b.annotations))
  );
}

/**
 * revisionToRender picks the revision of a member whose pool this Env owns:
 * - the one its pool records, while it is of the Env's template (and pinned version);
 * - for a pool made before members recorded one, the template as it is now when rendering from it
 *   changes nothing, else what the pool carries (derivedRevision): an upgrade rolls nothing;
 * - otherwise (the Env now names another template or pins another version: the Env's own change)
 *   the template as it is now, or none (the render is incomplete and the pool's template fields
 *   stay as they are) when it is missing or not at the pinned version.
 */
function revisionToRender(
  env: SandboxEnv,
  member: EnvClusterMember,
  pool: SandboxPool,
  current: TemplateRevision | undefined,
  render: (revision: TemplateRevision | undefined) => RenderedMember,
): TemplateRevision | undefined {
  const recorded = recordedRevision(pool);
  if (recorded) return matchesRef(recorded, env) ? recorded : current;
  const derived = derivedRevision(pool, member);
  if (!derived || !matchesRef(derived, env)) return current;
  if (current && sameRender(render(derived), render(current))) return current;
  return derived;
}

/**
 * viewMember renders one local member with its pool (any owner, or none): a new member, a
 * snapshot member and a pool the Env does not own render from the template as it is now; a member
 * pool the Env owns from the revision revisionToRender picks. `behind` says, when that revision is
 * not the template's current one, which revisions they are (a refresh would write the pool).
 */
export function viewMember(
  env: SandboxEnv,
  member: EnvClusterMember,
  pool: SandboxPool | undefined,
  inputs: MemberInputs,
): MemberView {
  const current = currentRevision(env, inputs.template);
  const render = (revision: TemplateRevision | undefined) =>
    renderMember(env, member, { ...inputs, revision });
  if (!pool || isSnapshotMember(member) || !ownedBy(pool, env) || isTerminating(pool))
    return { member, pool, rendered: render(current) };
  const revision = revisionToRender(env, member, pool, current, render);
  const rendered = render(revision);
  if (!revision || !current || sameRevision(revision, current)) return { member, pool, rendered };
  const behind = `renders ${describeRevision(revision)}; SandboxTemplate "${current.name}" is at ${describeRevision(current)}`;
  return { member, pool, rendered, behind };
}
