import type { V1Pod } from "@kubernetes/client-node";
import { hasPendingHooks, readHooks } from "../../lib/lifecycle/post-start-hooks.ts";
import { lazyPodReset } from "../../lib/pool/render-pod.ts";
import { type HookRun, planHookOutcome } from "../../lib/reconcile/post-start-hooks.ts";
import { envdInit } from "../envd-init.ts";
import type { HostDeps } from "../host-deps.ts";
import type { Step } from "./step.ts";

/** runHooks runs one pod's hooks in order, stopping at the first failure. */
async function runHooks(deps: HostDeps, pod: V1Pod): Promise<HookRun> {
  const read = readHooks(pod);
  if (!read.ok) return { ok: false, error: read.reason };
  if (!deps.postStart)
    return { ok: false, error: "this control plane has no sealing key (AGENTBOX_SEALING_KEY)" };
  for (const hook of read.hooks) {
    const run = await envdInit(deps.postStart, pod, hook, deps.now());
    if (!run.ok) return run;
  }
  return { ok: true };
}

/**
 * runPostStartHooks runs the post-start hooks of sandboxes that just started running (all of
 * them at once), then removes the hooks of those that succeeded, or fails those out of time (see
 * planHookOutcome). Hooks may run again if a run crashes before its write: envd's /init sets the
 * same env and token again, so that is harmless.
 */
export const runPostStartHooks: Step = {
  name: "run-post-start-hooks",
  plan: async (deps, { pool, pods }) => {
    const pending = pods.filter(hasPendingHooks);
    // One pod's failure is its own: the others' hooks still run and are judged.
    const settled = await Promise.allSettled(pending.map((pod) => runHooks(deps, pod)));
    const runs = settled.map(
      (r): HookRun => (r.status === "fulfilled" ? r.value : { ok: false, error: String(r.reason) }),
    );
    const deadline = deps.postStart?.deadlineSeconds ?? 0;
    const reset = lazyPodReset(pool);
    return pending.flatMap((pod, i) =>
      planHookOutcome(pod, runs[i] ?? { ok: false, error: "not run" }, reset, deadline, deps.now()),
    );
  },
};
