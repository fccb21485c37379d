// Who owns a SandboxPool: an Env (through an ownerReference), or nobody (a standalone pool).
// Member pools are rendered by their Env, standalone pools by their own spec; every step that
// writes a pool's spec asks these first, so the two kinds never have two writers.
import { API_VERSION, GROUP, KIND } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";

/** OwnerReference is the metav1.OwnerReference shape, as far as ownership checks read it. */
export interface OwnerReference {
  [key: string]: unknown;
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

interface Owned {
  metadata?: { ownerReferences?: readonly OwnerReference[] | undefined } | undefined;
}

/** isEnvReference: the reference names a SandboxEnv of our group, whatever its version. */
function isEnvReference(ref: OwnerReference): boolean {
  return ref.kind === KIND.SANDBOX_ENV && ref.apiVersion.startsWith(`${GROUP}/`);
}

/**
 * hasEnvOwner reports whether obj has an ownerReference to a SandboxEnv of this group, controlling
 * or not (adoption stamps a non-controlling one, as upstream's Phase 1 does). The version is not
 * compared, so a later API version still counts.
 */
export function hasEnvOwner(obj: Owned): boolean {
  return (obj.metadata?.ownerReferences ?? []).some(isEnvReference);
}

/** envOwnerOf is the name of the Env that owns obj, when one does. */
export function envOwnerOf(obj: Owned): string | undefined {
  return (obj.metadata?.ownerReferences ?? []).find(isEnvReference)?.name;
}

/** ownedBy reports whether obj is owned by this very Env (same uid, not only the same name). */
export function ownedBy(obj: Owned, env: SandboxEnv): boolean {
  const uid = env.metadata?.uid;
  return (
    uid !== undefined && (obj.metadata?.ownerReferences ?? []).some((r) => isEnvReference(r) && r.uid === uid)
  );
}

/**
 * envOwnerReference is the reference an Env stamps on a member pool: controlling for pools it
 * created (garbage collection deletes them with the Env), non-controlling for adopted pools.
 */
export function envOwnerReference(env: SandboxEnv, controller: boolean): OwnerReference {
  const { name, uid } = env.metadata ?? {};
  if (!name || !uid)
    throw new Error("envOwnerReference: the Env needs metadata.name and uid (read it from the API server)");
  return {
    apiVersion: API_VERSION,
    kind: KIND.SANDBOX_ENV,
    name,
    uid,
    controller,
    blockOwnerDeletion: true,
  };
}

/**
 * foreignMemberPool says why a pool carrying a member's name does not serve the Env: not owned by
 * it, or rendered from another template. Undefined when it serves it. Routing and the autoscaler
 * use only pools that serve the Env (a tenant allowed the Env's template must never be handed a
 * sandbox of another template, nor another Env's pool be scaled); the Env status reports the
 * others as Inconsistent.
 */
export function foreignMemberPool(
  pool: Owned & { spec: { templateName?: string | undefined } },
  env: SandboxEnv,
): string | undefined {
  const name = (pool.metadata as { name?: string } | undefined)?.name ?? "";
  if (!ownedBy(pool, env)) return `a SandboxPool "${name}" exists that this Env does not own`;
  const ref = env.spec.templateRef.name;
  if ((pool.spec.templateName ?? "") !== ref)
    return `its pool uses template "${pool.spec.templateName ?? ""}", not "${ref}"`;
  return undefined;
}
