// Where a sandbox's lines start in its container's log. The claim's time is the host's clock
// (claimed-at, whole seconds) and the lines' stamps the node's: a container that ran before the
// claim (the fast path keeps it) is cut at the claim, a container the claim (or a later restart)
// started is not cut at all, since every line of it is the sandbox's. Which of the two it is is
// read from container IDs, which no clock skews.
import type { V1Pod } from "@kubernetes/client-node";
import { INPLACE_UPDATE_PHASE, SANDBOX_PHASE } from "../crd/keys.ts";
import { readInplaceState } from "../lifecycle/inplace-state.ts";
import { parseTime } from "../util/time.ts";

/**
 * ranAtClaim tells whether `container`'s current run was already running when the pod was
 * claimed, from the claim's in-place state (towards running): a claim that swapped nothing
 * (no targetImages) snapshotted the containers it kept, so the same containerID ran at the claim
 * and another one was restarted since; a claim that swaps images restarts the containers in
 * targetImages (the same containerID as before the swap, while it starts, is still the old run)
 * and keeps the others (a containerID other than the snapshot taken when it completed is a later
 * restart). Undefined when the state does not say (no state, another phase, no IDs yet).
 */
export function ranAtClaim(pod: V1Pod, container: string): boolean | undefined {
  const { state } = readInplaceState(pod);
  if (state?.targetPodPhase !== SANDBOX_PHASE.RUNNING) return undefined;
  const now = pod.status?.containerStatuses?.find((s) => s.name === container)?.containerID;
  if (!now) return undefined;
  const completed = state.phase === INPLACE_UPDATE_PHASE.COMPLETED;
  const stable = state.stableContainerStatuses?.[container]?.containerID;
  const swapped = state.targetImages !== undefined && container in state.targetImages;
  if (swapped) {
    if (completed) return false;
    const before = state.lastContainerStatuses?.[container]?.containerID;
    return before ? now === before : undefined;
  }
  if (!completed) return state.phase === INPLACE_UPDATE_PHASE.STARTING ? true : undefined;
  return stable ? now === stable : undefined;
}

/**
 * ClaimCuts are the first instants (ms) whose lines are the sandbox's: `claim` for its LogDir
 * files, `container` for its container's log.
 */
export interface ClaimCuts {
  claim: number;
  container: number;
}

/**
 * claimCuts: the claim's time is whole seconds, so a container that ran at the claim (`ran`)
 * printed lines in that second before it: its cut is the end of that second, and so is the LogDir
 * files' (written by what ran then). A container whose run started after the claim (`ran` false)
 * printed nothing of anyone else's: it is not cut (its cut is its own start's second, `startedMs`,
 * when that is earlier than the claim, as it is on a node whose clock is behind the host's), so
 * clock skew cannot hide its first lines. When the state does not say (`ran` undefined), the
 * container's start decides, as far as two clocks allow: before the claim's second, it ran then.
 */
export function claimCuts(
  claimedMs: number,
  startedMs: number | undefined,
  ran: boolean | undefined,
): ClaimCuts {
  const before = ran ?? (startedMs !== undefined && startedMs < claimedMs);
  if (before) return { claim: claimedMs + 1000, container: claimedMs + 1000 };
  const start = startedMs === undefined ? claimedMs : Math.floor(startedMs / 1000) * 1000;
  return { claim: claimedMs, container: ran === false ? Math.min(claimedMs, start) : claimedMs };
}

/** startedMs is when `container`'s current run started (its status's running.startedAt), in ms. */
export function startedMs(pod: V1Pod, container: string): number | undefined {
  const running = pod.status?.containerStatuses?.find((s) => s.name === container)?.state?.running;
  return parseTime(running?.startedAt)?.getTime();
}
