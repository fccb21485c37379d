import type { Action } from "../../lib/kube/action.ts";
import type { HostDeps } from "../host-deps.ts";
import type { ActionOutcome } from "./execute.ts";
import type { PoolSnapshot } from "./snapshot.ts";

/** StepResult is what one step of a run did. */
export interface StepResult {
  step: string;
  outcomes: ActionOutcome[];
}

/**
 * Step is one reconcile step: from a fresh snapshot it plans (pure decisions in lib/, plus any
 * I/O a decision needs first, such as resolving image digests) the writes to make. `earlier` is
 * what the run's previous steps did (the status step reports a refused pod create).
 */
export interface Step {
  name: string;
  plan: (deps: HostDeps, snapshot: PoolSnapshot, earlier?: readonly StepResult[]) => Promise<Action[]>;
}

/**
 * StepRefused is thrown by a step asked for something it will not do (a manual refresh of a pool
 * its Env renders); the manual triggers answer it as a client error with its message.
 */
export class StepRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StepRefused";
  }
}

/**
 * Misconfigured is thrown by a step the host is not configured for (the Env step without a local
 * cluster ID); the manual triggers answer it as a server error naming the missing setting.
 */
export class Misconfigured extends Error {
  constructor(message: string) {
    super(message);
    this.name = "Misconfigured";
  }
}

/**
 * NotFound is thrown by a manual trigger whose target does not exist (an unknown Env or member);
 * the manual triggers answer it as 404 with its message.
 */
export class NotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotFound";
  }
}
