// How E2B's requests map onto the native ones: pure, so the routes only do I/O.

import type { SandboxView } from "../claims/sandbox-view.ts";
import { CreateSandboxRequest } from "../claims/schemas.ts";
import { waitSeconds } from "../claims/wait-seconds.ts";
import type { ApiIssue } from "../crd/parse-with.ts";
import { parseWith } from "../crd/parse-with.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { NewSandbox } from "./schemas.ts";

/** issueText joins validation issues into E2B's one-line message, `path: message; …`. */
export function issueText(issues: readonly ApiIssue[], rename: (path: string) => string = (p) => p): string {
  return issues.map((i) => `${rename(i.path) || "body"}: ${i.message}`).join("; ");
}

/**
 * E2B_IDLE_WAIT_SECONDS is how long an E2B create waits for an idle pod when none is free: the SDK
 * has no wait option and simply waits for the answer, so a pool or Env scaled to zero wakes for
 * the create instead of answering 503. The wait for Running gets what is left of the SDK's time.
 */
export const E2B_IDLE_WAIT_SECONDS = 20;

/**
 * INSTANCE_TYPE_KEY and MULTIPLIER_KEY are the metadata keys an E2B create asks for an instance
 * shape with (the SDK has no field for it): the native create's instanceType and multiplier.
 */
export const INSTANCE_TYPE_KEY = "agentbox.instanceType";
export const MULTIPLIER_KEY = "agentbox.multiplier";

/** shapeOf reads the instance shape an E2B create's metadata asks for (a multiplier as a number). */
function shapeOf(metadata: Readonly<Record<string, string>> | undefined) {
  const type = metadata?.[INSTANCE_TYPE_KEY];
  const multiplier = metadata?.[MULTIPLIER_KEY];
  return {
    ...(type !== undefined ? { instanceType: type } : {}),
    ...(multiplier !== undefined
      ? { multiplier: /^\d{1,9}$/.test(multiplier) ? Number(multiplier) : multiplier }
      : {}),
  };
}

/**
 * networkOf is the native `network` of an E2B create: its egress lists and allowPublicTraffic, and
 * `allow_internet_access` (a top-level field in E2B's body) as allowInternetAccess; none when it
 * asks for nothing.
 */
function networkOf(req: NewSandbox) {
  const n = req.network ?? {};
  const network = {
    ...(n.allowOut ? { allowOut: n.allowOut } : {}),
    ...(n.denyOut ? { denyOut: n.denyOut } : {}),
    ...(typeof req.allow_internet_access === "boolean"
      ? { allowInternetAccess: req.allow_internet_access }
      : {}),
    ...(typeof n.allowPublicTraffic === "boolean" ? { allowPublicTraffic: n.allowPublicTraffic } : {}),
  };
  return Object.keys(network).length > 0 ? { network } : {};
}

/**
 * nativeCreate turns an E2B create into a /v1 create: a templateID with a "/" names a pool
 * (namespace/name), else a SandboxTemplate (or an Env built on it); `timeout` is the lifetime;
 * the create waits E2B_IDLE_WAIT_SECONDS for an idle pod; metadata's agentbox.instanceType (and
 * agentbox.multiplier) ask for an instance shape (the metadata keeps them); `network` and
 * `allow_internet_access` become the native `network`. Validation issues name
 * templateID where the native request would say pool or template, and the metadata keys.
 */
export function nativeCreate(
  req: NewSandbox,
): { ok: true; value: CreateSandboxRequest } | { ok: false; message: string } {
  const target = req.templateID.includes("/") ? { pool: req.templateID } : { template: req.templateID };
  const native = parseWith(CreateSandboxRequest, {
    ...target,
    timeout: req.timeout,
    waitTimeout: E2B_IDLE_WAIT_SECONDS,
    ...(req.metadata ? { metadata: req.metadata } : {}),
    ...(req.envVars ? { envVars: req.envVars } : {}),
    ...shapeOf(req.metadata),
    ...networkOf(req),
  });
  if (native.ok) return native;
  return {
    ok: false,
    message: issueText(native.issues, (p) =>
      p
        .replace(/^(pool|template)\b/, "templateID")
        .replace(/^instanceType\b/, `metadata.${INSTANCE_TYPE_KEY}`)
        .replace(/^multiplier\b/, `metadata.${MULTIPLIER_KEY}`)
        .replace(/^network\.allowInternetAccess\b/, "allow_internet_access"),
    ),
  };
}

/**
 * E2B_OPERATION_WAIT_SECONDS is how long a pause (its commit) or a resume (its pod running) waits
 * before answering: under the e2b SDK's 60 s request timeout, after which nobody would learn how
 * it ended.
 */
export const E2B_OPERATION_WAIT_SECONDS = 50;

/** MAX_CREATE_WAIT_SECONDS keeps a create's wait under the e2b SDK's 60 s request timeout. */
const MAX_CREATE_WAIT_SECONDS = 55;

/**
 * createWaitSeconds is how long an E2B create waits for Running after `spentSeconds` waiting for an
 * idle pod: the pool's startup timeout, but never past the SDK's own request timeout (after which
 * nobody would learn the sandbox's id); at least a second.
 */
export function createWaitSeconds(pool: SandboxPool, spentSeconds = 0): number {
  return Math.max(1, Math.min(waitSeconds(pool, {}), Math.floor(MAX_CREATE_WAIT_SECONDS - spentSeconds)));
}

/** ListFilter is what E2B's list filters keep beyond the apiserver's selectors. */
export interface ListFilter {
  template?: string;
  startedAfter?: string;
}

/** keepListed: an E2B list shows a sandbox when it is visible and matches the template and start filters. */
export function keepListed(
  view: SandboxView,
  templateId: string,
  filter: ListFilter,
  visible: boolean,
): boolean {
  if (!visible) return false;
  if (filter.template && templateId !== filter.template) return false;
  return !filter.startedAfter || Date.parse(view.claimedAt ?? "") >= Date.parse(filter.startedAfter);
}
