// A member's per-Pod resources from the catalog: InstanceType × Multiplier (seed 002,
// EnvObservedMember.EffectiveResources "= InstanceType.resources × Multiplier, or InlineResources
// verbatim"; EnvClusterMemberConfig.InstanceType "if both are set, InstanceType wins").
import type { V1ResourceRequirements } from "@kubernetes/client-node";
import type { EnvClusterMember, SandboxEnv } from "../crd/sandbox-env.ts";
import type { InstanceType, InstanceTypeCatalog } from "./instance-types.ts";

const NUMBER = /^\+?(\d*)(?:\.(\d*))?([A-Za-z][A-Za-z0-9+-]*)?$/;

/**
 * scaleQuantity multiplies a non-negative quantity by a whole factor exactly, keeping its suffix
 * ("500m" × 3 = "1500m", "4Gi" × 2 = "8Gi", "1.5" × 3 = "4.5", "1e3" × 2 = "2e3"); decimal
 * digits are multiplied as integers, so no float rounding creeps in.
 */
export function scaleQuantity(quantity: string, factor: number): string {
  const match = NUMBER.exec(quantity);
  if (!match || !Number.isInteger(factor) || factor < 0) throw new Error(`cannot scale "${quantity}"`);
  const [, whole = "", fraction = "", suffix = ""] = match;
  const digits = (BigInt(`${whole}${fraction}` || "0") * BigInt(factor))
    .toString()
    .padStart(fraction.length + 1, "0");
  const intPart = digits.slice(0, digits.length - fraction.length);
  const fracPart = digits.slice(digits.length - fraction.length).replace(/0+$/, "");
  return `${intPart}${fracPart ? `.${fracPart}` : ""}${suffix}`;
}

/**
 * scaledResources are an instance type's resources × multiplier, as requests and limits alike:
 * an instance type is a fixed slice of a node (CPU, memory and the GPU count all multiplied).
 */
export function scaledResources(type: InstanceType, multiplier: number): V1ResourceRequirements {
  const list: Record<string, string> = {
    cpu: scaleQuantity(type.cpu, multiplier),
    memory: scaleQuantity(type.memory, multiplier),
    ...(type.gpu ? { [type.gpu.resourceName]: String(type.gpu.count * multiplier) } : {}),
  };
  return { requests: { ...list }, limits: { ...list } };
}

/** Resolved is an instance type found in the catalog with a multiplier in its range. */
export type Resolved =
  | { ok: true; type: InstanceType; resources: V1ResourceRequirements }
  | { ok: false; field: "instanceType" | "multiplier"; problem: string };

/**
 * resolveInstanceType looks `name` up in the catalog and checks `multiplier` against the range
 * the type declares (seed 002, SandboxEnvDefaults.Multiplier: "Must fall within the
 * InstanceType's declared [min, max] range"). The problem names the catalog and what it has.
 */
export function resolveInstanceType(
  catalog: InstanceTypeCatalog,
  name: string,
  multiplier: number | undefined,
): Resolved {
  const where = `the instance type catalog (ConfigMap ${catalog.source})`;
  const type = catalog.types.get(name);
  const invalid = catalog.invalid.get(name);
  if (invalid)
    return {
      ok: false,
      field: "instanceType",
      problem: `instance type "${name}" is invalid in ${where}: ${invalid.join("; ")}`,
    };
  if (!type) {
    const known = [...catalog.types.keys()];
    return {
      ok: false,
      field: "instanceType",
      problem: `instance type "${name}" is not in ${where}; it has: ${known.length ? known.join(", ") : "none"}`,
    };
  }
  const { min, max } = type.multiplier;
  if (multiplier === undefined || multiplier < min || multiplier > max)
    return {
      ok: false,
      field: "multiplier",
      problem: `multiplier ${multiplier ?? "(unset)"} is outside [${min}, ${max}], the range instance type "${name}" declares in ${where}`,
    };
  return { ok: true, type, resources: scaledResources(type, multiplier) };
}

/** Sizing is what the catalog makes of a member: its resources, or why it cannot size it. */
export interface Sizing {
  /** resources are InstanceType × Multiplier, when the member names a type the catalog resolves. */
  resources?: V1ResourceRequirements;
  /** problem: the member names a type the catalog does not resolve (the member is Inconsistent). */
  problem?: string;
}

/**
 * memberSizing sizes a member from the catalog. Without a catalog (its ConfigMap does not exist)
 * or without an instanceType, nothing: the member keeps its inlineResources, else its template's
 * own, as before there was a catalog. A type the catalog does not resolve (unknown, invalid, or
 * the multiplier outside its range) is a problem, never a guess.
 */
export function memberSizing(member: EnvClusterMember, catalog: InstanceTypeCatalog | undefined): Sizing {
  const name = member.config?.instanceType;
  if (!catalog || !name) return {};
  const resolved = resolveInstanceType(catalog, name, member.config?.multiplier);
  return resolved.ok ? { resources: resolved.resources } : { problem: resolved.problem };
}

/** namesInstanceType: the Env's defaults or one of its members name an instance type. */
export function namesInstanceType(env: SandboxEnv): boolean {
  return (
    Boolean(env.spec.defaults?.instanceType) ||
    (env.spec.clusters ?? []).some((c) => (c.members ?? []).some((m) => Boolean(m.config?.instanceType)))
  );
}
