import type { Action } from "../lib/reconcile/action.ts";
import type { StepDeps } from "./deps.ts";
import type { PoolSnapshot } from "./snapshot.ts";

/**
 * Step is one reconcile step: from a fresh snapshot it plans (pure decisions in lib/, plus any
 * I/O a decision needs first, such as resolving image digests) the writes to make.
 */
export interface Step {
  name: string;
  plan: (deps: StepDeps, snapshot: PoolSnapshot) => Promise<Action[]>;
}
