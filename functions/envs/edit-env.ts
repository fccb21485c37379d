import { API_VERSION } from "../../lib/crd/keys.ts";
import { planEnvEdit } from "../../lib/env/env-edit.ts";
import { apiserverRejection, type EnvEditRejection, rejection } from "../../lib/env/env-edit-rejection.ts";
import type { EnvEdit } from "../../lib/env/env-edit-request.ts";
import { isConflict, KubeError, orMissing } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

/** EnvEditDeps is what an edit needs: a client with the caller's rights, the clock, a log, who writes Events. */
export type EnvEditDeps = Pick<HostDeps, "kube" | "now" | "log" | "reporter">;

/** EnvEditResult says what an edit did: `changed` false when the Env already was so. */
export interface EnvEditResult {
  env: string;
  changed: boolean;
  summary: string;
}

/**
 * EnvEditRefused is an edit that was not made, with why (its rejection: status, message, fields):
 * bad input, an unknown member or group, a conflict that outlived one re-plan, or the apiserver's
 * refusal (admission, schema, RBAC). The console and the CLI show it as it is.
 */
export class EnvEditRefused extends Error {
  readonly rejection: EnvEditRejection;
  constructor(r: EnvEditRejection) {
    super(r.message);
    this.name = "EnvEditRefused";
    this.rejection = r;
  }
}

const ACTIONS: Record<EnvEdit["op"], string> = {
  "add-member": "AddMember",
  "remove-member": "RemoveMember",
  "set-member": "SetMember",
  "set-group": "SetGroup",
  "remove-group": "RemoveGroup",
};

/**
 * editEnv makes one operator edit of an Env's segment for clusterId through the apiserver, with
 * the rights of `deps.kube` (the CLI: the caller's kubeconfig; the console: the host's, for an
 * admin only), so admission checks it as it checks kubectl. It reads the Env from etcd, plans
 * (planEnvEdit) and patches under the spec it read (uid and generation, so status writes do not
 * conflict with it); when the spec changed meanwhile (the autoscaler writes replicas) it reads
 * and plans once more, and refuses with 409 if it changed again. A written edit is recorded as an
 * `EnvEdited` Event on the Env naming `who` (best effort: the caller may not create Events).
 */
export async function editEnv(
  deps: EnvEditDeps,
  clusterId: string,
  namespace: string,
  name: string,
  edit: EnvEdit,
  who: string,
): Promise<EnvEditResult> {
  const key = `${namespace}/${name}`;
  for (let attempt = 0; ; attempt++) {
    const env = await orMissing(deps.kube.getEnv(namespace, name)).catch(refusedByApiserver);
    if (!env) throw new EnvEditRefused(rejection(404, `SandboxEnv "${key}" does not exist`));
    const plan = planEnvEdit(env, edit, clusterId);
    if (!plan.ok)
      throw new EnvEditRefused(
        rejection(plan.status, plan.message, [{ path: plan.field, message: plan.message }]),
      );
    if (plan.ops.length === 0) return { env: key, changed: false, summary: plan.summary };
    try {
      await deps.kube.patchEnv(namespace, name, plan.ops);
    } catch (e) {
      if (isConflict(e) && attempt === 0) continue;
      if (isConflict(e))
        throw new EnvEditRefused(
          rejection(
            409,
            `SandboxEnv "${key}" changed twice while this edit was made (the autoscaler or another operator wrote it); look at it again and retry`,
          ),
        );
      const r = e instanceof KubeError ? apiserverRejection(plan.next, e) : undefined;
      if (r) throw new EnvEditRefused(r);
      throw e;
    }
    deps.log.info({ env: key, op: edit.op, who }, plan.summary);
    await deps.kube
      .createEvent(
        {
          type: "Normal",
          reason: "EnvEdited",
          action: ACTIONS[edit.op],
          note: `${who}: ${plan.summary}`,
          regarding: { apiVersion: API_VERSION, kind: "SandboxEnv", namespace, name, uid: env.metadata?.uid },
        },
        deps.now(),
        deps.reporter.controller,
        deps.reporter.instance,
      )
      .catch((e: unknown) => deps.log.warn({ env: key, err: String(e) }, "EnvEdited event not recorded"));
    return { env: key, changed: true, summary: plan.summary };
  }
}

/** refusedByApiserver turns a read's 403 into the caller's refusal; anything else rejects as it is. */
function refusedByApiserver(e: unknown): never {
  if (e instanceof KubeError && e.status === 403)
    throw new EnvEditRefused(
      rejection(403, `you may not read this SandboxEnv (the apiserver says: ${e.message})`),
    );
  throw e;
}
