import type { Log } from "../../lib/util/log.ts";
import { waitAtMost } from "../../lib/util/with-timeout.ts";

/** DrainSettings say how a stopping host lets go of its traffic (AGENTBOX_SHUTDOWN_*_SECONDS). */
export interface DrainSettings {
  /** settleMs: how long the host serves on after readiness went false, for endpoints to drop it. */
  settleMs: number;
  /** graceMs: how long requests under way then have to end; what is left after it is cut. */
  graceMs: number;
}

/**
 * ANSWER_MS is the end of the grace kept for creates whose waits are stopped to answer (a
 * hand-back write each), at most half the grace: waits still going are stopped that long before
 * the grace ends.
 */
export const ANSWER_MS = 5_000;

/** DrainTarget is what drain works on: the host's readiness, its server and its waiting creates. */
export interface DrainTarget {
  /** notReady turns /readyz to 503. */
  notReady(): void;
  /** stopAccepting closes the listener; requests under way go on (Served.stopAccepting). */
  stopAccepting(): void;
  inFlight(): number;
  /** settled resolves once no request is under way. */
  settled(): Promise<void>;
  /** stopWaits ends the creates still waiting: they hand their starts back and answer 503. */
  stopWaits(): void;
  /** cut closes every connection left; resolves once the server is closed. */
  cut(): Promise<void>;
}

/**
 * drain takes a host out of service without failing its callers (ADR 0029): readiness goes false
 * at once, and the host serves on for settleMs, so load balancers and Endpoints stop sending it
 * new work before it stops taking any; then it closes its listener and gives the requests under
 * way graceMs to end (creates and their waits included). Waits still going ANSWER_MS before the
 * grace ends are stopped, so each hands its start back and answers (503) in time; what is left
 * when the grace ends is cut. Resolves with how many requests were under way at each step.
 */
export async function drain(
  target: DrainTarget,
  settings: DrainSettings,
  log: Log,
): Promise<{ atClose: number; stopped: number; cut: number }> {
  target.notReady();
  log.info(
    { settleSeconds: settings.settleMs / 1000 },
    "stopping: not ready; serving on while endpoints drop this host",
  );
  if (settings.settleMs > 0) await new Promise((r) => setTimeout(r, settings.settleMs));
  target.stopAccepting();
  const atClose = target.inFlight();
  log.info(
    { inFlight: atClose, graceSeconds: settings.graceMs / 1000 },
    "stopping: no new connections; letting requests under way end",
  );
  const answerMs = Math.min(ANSWER_MS, settings.graceMs / 2);
  let stopped = 0;
  if (!(await waitAtMost(target.settled(), settings.graceMs - answerMs))) {
    stopped = target.inFlight();
    log.warn(
      { inFlight: stopped },
      "stopping: grace ending; waiting creates hand their starts back and answer",
    );
    target.stopWaits();
    await waitAtMost(target.settled(), answerMs);
  }
  // A request that came in on a connection accepted just before the close waits no longer either.
  target.stopWaits();
  const cut = target.inFlight();
  if (cut > 0) log.warn({ inFlight: cut }, "stopping: cutting the requests left");
  await target.cut();
  return { atClose, stopped, cut };
}
