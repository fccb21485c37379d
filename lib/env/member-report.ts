// What an Env run knows of one local member: its live pool and render (MemberView), and what the
// status says of it (MemberReport). Apart from env-status.ts so the stall check and the
// conditions can read them without importing the status computation.
import type { EnvObservedMember } from "../crd/sandbox-env-status.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { EnvClusterMember } from "../membership/env-members.ts";
import type { RenderedMember } from "./render-member.ts";

/** MemberView is one local member with its live pool (any owner) and its render. */
export interface MemberView {
  member: EnvClusterMember;
  pool: SandboxPool | undefined;
  rendered: RenderedMember;
  /** behind says which revisions, when the member renders from an older one than its template's (member-view.ts). */
  behind?: string;
}

/**
 * MemberReport is a member's observed state and, when it is not Active, why; `behind` as in
 * MemberView (the member's state does not change: it serves as before).
 */
export interface MemberReport {
  observed: EnvObservedMember;
  why?: string;
  behind?: string;
}
