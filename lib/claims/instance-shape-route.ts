// Which members a create may be served from when it asks for an instance shape (ADR 0032): a
// create names an instanceType (and optionally a multiplier), else an Env's defaults name one
// (seed 002, SandboxEnvDefaults: "the default instance shape for Sandbox.create requests that
// don't specify one"); only members of that shape serve it, and when none has it the answer is a
// 404 listing the shapes the caller may ask for. Decided from the Env as read: no catalog needed.
import type { EnvClusterMember, SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { localMembers } from "../membership/env-members.ts";

/** Shape is an instance type and its multiplier, as a member's config names them. */
export interface Shape {
  instanceType: string;
  multiplier: number;
}

/** WantedShape is what a create asks for: a type, and a multiplier when it names one. */
export interface WantedShape {
  instanceType: string;
  multiplier?: number | undefined;
  /** fromDefaults: the create named none; the Env's spec.defaults did. */
  fromDefaults?: boolean;
}

/** ShapeRequest is the part of a create that asks for a shape. */
export interface ShapeRequest {
  instanceType?: string | undefined;
  multiplier?: number | undefined;
}

/** ShapeDecision: the members that may serve the create (all when `accept` is unset), or a 404. */
export type ShapeDecision =
  | { ok: true; accept?: (member: EnvClusterMember) => boolean }
  | { ok: false; name: string; choices: string[]; message: string };

/** memberShape is the member's instance shape, undefined when it names no instance type. */
export function memberShape(member: EnvClusterMember): Shape | undefined {
  const type = member.config?.instanceType;
  return type ? { instanceType: type, multiplier: member.config?.multiplier ?? 1 } : undefined;
}

/** shapeName writes a shape as the API lists it: "gpu-a100 x2" (a type alone: "gpu-a100"). */
export function shapeName(shape: { instanceType: string; multiplier?: number | undefined }): string {
  return shape.multiplier === undefined ? shape.instanceType : `${shape.instanceType} x${shape.multiplier}`;
}

/** fits: the member has the wanted type, and the wanted multiplier when one is asked for. */
function fits(member: EnvClusterMember, wanted: WantedShape): boolean {
  const shape = memberShape(member);
  return (
    shape !== undefined &&
    shape.instanceType === wanted.instanceType &&
    (wanted.multiplier === undefined || shape.multiplier === wanted.multiplier)
  );
}

/** shapesOf lists the distinct shapes of members, sorted ("none" is left to the message). */
function shapesOf(members: readonly EnvClusterMember[]): string[] {
  const shapes = members.map(memberShape).filter((s): s is Shape => s !== undefined);
  return [...new Set(shapes.map(shapeName))].sort();
}

/** listed words a list of shapes for a message. */
function listed(shapes: readonly string[]): string {
  return shapes.length > 0 ? shapes.join(", ") : "none (no member names an instance type)";
}

/**
 * wantedShape is the shape a create asks of an Env: the request's instanceType (and multiplier),
 * else the Env's defaults (type and multiplier), else none.
 */
export function wantedShape(req: ShapeRequest, env: SandboxEnv | undefined): WantedShape | undefined {
  if (req.instanceType) return { instanceType: req.instanceType, multiplier: req.multiplier };
  const defaults = env?.spec.defaults;
  return defaults?.instanceType
    ? { instanceType: defaults.instanceType, multiplier: defaults.multiplier, fromDefaults: true }
    : undefined;
}

/**
 * envShapeDecision decides which of an Env's local members may serve a create (`clusterId`'s
 * segment: the members this host routes to). No shape wanted: all of them. A shape some member
 * has: those members (whether they have idle pods now is routing's business). A shape no member
 * has: a 404 whose choices are the shapes the local members have.
 */
export function envShapeDecision(env: SandboxEnv, clusterId: string, req: ShapeRequest): ShapeDecision {
  const wanted = wantedShape(req, env);
  if (!wanted) return { ok: true };
  const members = localMembers(env, clusterId);
  if (members.some((m) => fits(m, wanted))) return { ok: true, accept: (m) => fits(m, wanted) };
  const choices = shapesOf(members);
  const envName = `${env.metadata?.namespace}/${env.metadata?.name}`;
  const name = shapeName(wanted);
  const message = wanted.fromDefaults
    ? `no member of env ${envName} here has its default shape ${name} (spec.defaults); ask for one it has with instanceType (and multiplier): ${listed(choices)}`
    : `no member of env ${envName} here has instance type ${name}; shapes you may use: ${listed(choices)}`;
  return { ok: false, name, choices, message };
}

/**
 * poolShapeDecision decides a create that names a pool (or a template served by a pool): only a
 * shape the request asks for counts (an Env's defaults are for creates that name the Env), and the
 * pool's shape is its member's in the Env it belongs to (`memberOf`), none for a standalone pool.
 */
export function poolShapeDecision(
  pool: SandboxPool,
  memberOf: SandboxEnv | undefined,
  req: ShapeRequest,
): ShapeDecision {
  if (!req.instanceType) return { ok: true };
  const wanted: WantedShape = { instanceType: req.instanceType, multiplier: req.multiplier };
  const name = pool.metadata?.name;
  const member = (memberOf?.spec.clusters ?? []).flatMap((c) => c.members ?? []).find((m) => m.name === name);
  if (member && fits(member, wanted)) return { ok: true };
  const choices = member ? shapesOf([member]) : [];
  return {
    ok: false,
    name: shapeName(wanted),
    choices,
    message: `pool ${pool.metadata?.namespace}/${name} is not of instance type ${shapeName(wanted)}; its shape: ${listed(choices)}`,
  };
}
