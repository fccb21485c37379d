import { limitFor } from "../../lib/claims/team-limits.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { claimHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import type { ResumeClaim } from "../../lib/snapshots/snapshot-state.ts";
import type { Claim } from "../api/claim-from.ts";
import { UNSUITABLE } from "../cache/idle-dispatch.ts";
import { claimSandbox } from "../claim-sandbox.ts";
import type { HostDeps } from "../host-deps.ts";

/** ResumeClaimer claims a pod for a resume; `limited` is the team's count when its limit refused one. */
export interface ResumeClaimer {
  claimIn: Claim;
  limited: () => number | undefined;
}

/**
 * resumeClaimer is a resume's claim of one idle pod of `pool` for sandbox `id` (the ordinary
 * preconditioned claim with the snapshot's images and settings, its envd hooks for that pod), and
 * counts against its team's limit as a create does (deps.teamHolds): a paused sandbox holds no
 * pod, so its resume is a new hold. A claim the limit refuses leaves the pod for others.
 */
export function resumeClaimer(
  deps: HostDeps,
  pool: SandboxPool,
  id: string,
  claim: ResumeClaim,
  waitSeconds: number | undefined,
): ResumeClaimer {
  const limit = limitFor(deps.teamLimits, claim.team);
  const holds = limit === undefined ? undefined : deps.teamHolds;
  let limitedAt: number | undefined;
  const claimIn: Claim = async (pod) => {
    const planned = claimHooks(
      pool,
      {
        sealing: deps.postStart?.keys !== undefined,
        port: deps.envdPort,
        ...(claim.sealedEnvVars ? { sealedEnvVars: claim.sealedEnvVars } : {}),
      },
      pod,
    );
    if (!planned.ok) return UNSUITABLE;
    const waits = waitSeconds && waitSeconds > 0 ? waitSeconds : undefined;
    const once = () =>
      claimSandbox(deps, pod, {
        sandboxId: id,
        ...(deps.pods?.claimedBy ? { claimedBy: deps.pods.claimedBy } : {}),
        containerImages: claim.containerImages,
        team: claim.team,
        ...(claim.user ? { user: claim.user } : {}),
        ...(claim.labels ? { labels: claim.labels } : {}),
        ...(claim.annotations ? { annotations: claim.annotations } : {}),
        ...(claim.metadata ? { metadata: claim.metadata } : {}),
        ...(planned.hooks.length > 0 ? { postStartHooks: planned.hooks } : {}),
        ...(waits ? { waiterUntil: new Date(deps.now().getTime() + waits * 1000) } : {}),
        marks: claim.marks,
        ...(claim.idleTimeoutSeconds ? { idleTimeoutSeconds: claim.idleTimeoutSeconds } : {}),
        ...(claim.startupTimeoutSeconds ? { startupTimeoutSeconds: claim.startupTimeoutSeconds } : {}),
        ...(claim.lifetimeSeconds ? { lifetimeSeconds: claim.lifetimeSeconds } : {}),
      });
    const checked =
      holds && limit !== undefined
        ? await holds.claim(claim.team, limit, once, (r) => (r.ok ? r.pod : undefined))
        : { ok: true as const, value: await once() };
    if (!checked.ok) {
      limitedAt = checked.held;
      return UNSUITABLE;
    }
    return checked.value.ok ? checked.value.pod : undefined;
  };
  return { claimIn, limited: () => limitedAt };
}
