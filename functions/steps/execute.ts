import type { V1Pod } from "@kubernetes/client-node";
import { API_VERSION } from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { Action } from "../../lib/kube/action.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

/** ActionOutcome is what became of one planned action. */
export interface ActionOutcome {
  target: string;
  /** op is the kind of write (create, patch, status, patch-status, delete). */
  op: Action["write"]["op"];
  why: string;
  result: "done" | "conflict" | "gone" | "exists" | "error";
  record?: "inserted" | "exists";
  error?: string;
}

/**
 * execute applies planned actions one by one: the history record first (idempotent), then the
 * preconditioned write, then the event (best effort). A failed precondition, a vanished object or
 * a lost create race is not an error: someone else acted first, and the next trigger re-reads
 * and re-plans. Nothing is retried here.
 */
export async function execute(deps: HostDeps, actions: readonly Action[]): Promise<ActionOutcome[]> {
  const outcomes: ActionOutcome[] = [];
  for (const action of actions) outcomes.push((await executeOne(deps, action)).outcome);
  return outcomes;
}

/**
 * executeOne applies one action as execute does, and also hands back the object the apiserver
 * answered a successful write with (a step that writes again in the same run starts from it).
 */
export async function executeOne(
  deps: HostDeps,
  action: Action,
): Promise<{ outcome: ActionOutcome; written?: unknown }> {
  const { kind, namespace, name } = action.target;
  const outcome: ActionOutcome = {
    target: `${kind}/${namespace}/${name}`,
    op: action.write.op,
    why: action.why,
    result: "done",
  };
  let written: unknown;
  try {
    if (action.record) outcome.record = await deps.history.put(action.record);
    written = await write(deps, action);
    for (const { metric, seconds } of action.observe ?? []) deps.metrics?.phases[metric].observe(seconds);
    for (const event of [...(action.event ? [action.event] : []), ...(action.events ?? [])]) {
      await deps.kube
        .createEvent(
          {
            ...event,
            regarding: {
              apiVersion: kind === "Pod" ? "v1" : API_VERSION,
              kind,
              namespace,
              name,
            },
          },
          deps.now(),
          deps.reporter.controller,
          deps.reporter.instance,
        )
        .catch((e: unknown) =>
          deps.log.warn({ target: outcome.target, err: String(e) }, "event not recorded"),
        );
    }
  } catch (e) {
    outcome.result = isAlreadyExists(e)
      ? "exists"
      : isConflict(e)
        ? "conflict"
        : isNotFound(e)
          ? "gone"
          : "error";
    if (outcome.result === "error") outcome.error = String(e);
  }
  return outcome.result === "done" && written !== undefined ? { outcome, written } : { outcome };
}

async function write(deps: HostDeps, action: Action): Promise<unknown> {
  const { namespace, name, kind } = action.target;
  const { kube } = deps;
  const w = action.write;
  switch (w.op) {
    case "create":
      if (kind === "Pod") return kube.createPod(namespace, w.object as V1Pod);
      if (kind === "SandboxPool") return kube.createPool(namespace, w.object as SandboxPool);
      return kube.createEnv(namespace, w.object as SandboxEnv);
    case "patch":
      if (kind === "Pod") return kube.patchPod(namespace, name, w.patch);
      if (kind === "SandboxPool") return kube.patchPool(namespace, name, w.patch);
      return kube.patchEnv(namespace, name, w.patch);
    case "status":
      return kube.patchPoolStatus(namespace, name, w.status);
    case "patch-status":
      if (kind === "SandboxPool") return kube.patchPoolStatusOps(namespace, name, w.patch);
      if (kind === "SandboxEnv") return kube.patchEnvStatus(namespace, name, w.patch);
      if (kind === "SandboxTemplate") return kube.patchTemplateStatus(name, w.patch);
      throw new Error(`execute: cannot JSON-patch a ${kind}'s status`);
    case "delete": {
      const preconditions = {
        ...(w.uid ? { uid: w.uid } : {}),
        ...(w.resourceVersion ? { resourceVersion: w.resourceVersion } : {}),
      };
      if (kind === "Pod") await kube.deletePod(namespace, name, preconditions);
      else if (kind === "SandboxPool") await kube.deletePool(namespace, name, preconditions);
      else throw new Error(`execute: cannot delete a ${kind}`);
      return undefined;
    }
  }
}
