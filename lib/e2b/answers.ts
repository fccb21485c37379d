// What E2B's API shows of a sandbox, read from the same pod as the /v1 view. E2B knows two
// states, running and paused; a starting sandbox (its create still waiting) is shown running, and
// one that is stopping or failed is gone, as a killed E2B sandbox is. A paused sandbox holds no
// pod: its answers read the pod it will be again (lib/e2b/paused.ts pausedPod).

import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxView } from "../claims/sandbox-view.ts";
import { SANDBOX_PHASE } from "../crd/keys.ts";
import { E2B_CLIENT_ID } from "../data-plane/sandbox-host.ts";
import { networkOf } from "../egress/network.ts";
import { parseQuantity, quantityMilliValue, quantityValue } from "../lifecycle/quantity.ts";
import { pausesOnTimeout } from "../reconcile/lifetime-release.ts";

/** TEMPLATE_ID_ANNOTATION keeps the templateID an E2B create named, to show it back. */
export const TEMPLATE_ID_ANNOTATION = "e2b.agentbox.dev/template-id";
/**
 * UNSET_SANDBOX_DOMAIN is the `domain` answered when no sandbox domain is configured (ADR 0026):
 * the SDK reads `null` as "E2B's own", and would send envd traffic with the sandbox's token to
 * `sandbox.e2b.app`. A name under `.invalid` (RFC 6761) resolves nowhere, so the SDK's sandbox
 * traffic fails on the caller's machine, naming what is missing; E2B_SANDBOX_URL still works.
 */
export const UNSET_SANDBOX_DOMAIN = "sandbox-domain-unset.invalid";
/** NO_END is shown as endAt for a sandbox without a lifetime (E2B always has one). */
const NO_END = "9999-12-31T23:59:59Z";
const MiB = 1024 * 1024;

/** E2bSettings are what the control plane reports for every sandbox. */
export interface E2bSettings {
  /** envdVersion of the templates' envd (the SDK refuses < 0.1.0; it gates features on it). */
  envdVersion: string;
  /**
   * domain is the sandbox domain (AGENTBOX_SANDBOX_DOMAIN): the SDK reaches a sandbox's port at
   * `https://<port>-<sandboxID>.<domain>`. Unset, answers say UNSET_SANDBOX_DOMAIN (e2bDomain).
   */
  domain?: string;
}

/** E2bListed is E2B's ListedSandbox. */
export interface E2bListed {
  templateID: string;
  alias?: string;
  sandboxID: string;
  clientID: string;
  startedAt: string;
  endAt: string;
  cpuCount: number;
  memoryMB: number;
  diskSizeMB: number;
  metadata: Record<string, string>;
  state: "running" | "paused";
  envdVersion: string;
}

/** isE2bVisible: E2B shows starting, running and paused sandboxes; stopping and failed ones are gone. */
export function isE2bVisible(view: SandboxView): boolean {
  return (
    view.phase === SANDBOX_PHASE.STARTING || view.phase === SANDBOX_PHASE.RUNNING || view.phase === "paused"
  );
}

/** e2bState is E2B's state of a visible sandbox: paused, else running (a starting one included). */
export const e2bState = (view: SandboxView): "running" | "paused" =>
  view.phase === "paused" ? "paused" : "running";

/** resourcesOf reads the main container's limits (else requests): whole CPUs, MiB of memory and disk. */
export function resourcesOf(pod: V1Pod): { cpuCount: number; memoryMB: number; diskSizeMB: number } {
  const c = pod.spec?.containers?.[0]?.resources;
  const pick = (name: string) => {
    const q = parseQuantity(String(c?.limits?.[name] ?? c?.requests?.[name] ?? ""));
    return q;
  };
  const cpu = pick("cpu");
  const memory = pick("memory");
  const disk = pick("ephemeral-storage");
  return {
    cpuCount: cpu ? Math.max(1, Math.ceil(quantityMilliValue(cpu) / 1000)) : 1,
    memoryMB: memory ? Math.ceil(quantityValue(memory) / MiB) : 0,
    diskSizeMB: disk ? Math.ceil(quantityValue(disk) / MiB) : 0,
  };
}

/** templateIdOf is the templateID the create named, else the pool as "namespace/pool". */
export function templateIdOf(pod: V1Pod, view: SandboxView): string {
  return pod.metadata?.annotations?.[TEMPLATE_ID_ANNOTATION] ?? `${view.namespace}/${view.pool}`;
}

/**
 * e2bListed shows a sandbox as E2B's ListedSandbox. A paused one (its view from pausedView, its
 * pod from pausedPod) started when it was paused, as far as this view knows, and ends when its
 * retention does (a paused sandbox's lifetime does not run).
 */
export function e2bListed(pod: V1Pod, view: SandboxView, settings: E2bSettings): E2bListed {
  return {
    templateID: templateIdOf(pod, view),
    sandboxID: view.sandboxId,
    clientID: E2B_CLIENT_ID,
    startedAt: view.claimedAt ?? view.startedAt ?? view.pausedAt ?? new Date(0).toISOString(),
    endAt: view.endAt ?? view.retainUntil ?? NO_END,
    ...resourcesOf(pod),
    metadata: view.metadata,
    state: e2bState(view),
    envdVersion: settings.envdVersion,
  };
}

/** e2bDomain is the `domain` every answer carries: the sandbox domain, else UNSET_SANDBOX_DOMAIN, never null. */
export function e2bDomain(settings: E2bSettings): string {
  return settings.domain ?? UNSET_SANDBOX_DOMAIN;
}

/**
 * tokenField is the envdAccessToken of an answer: present when the caller is given the token (its
 * owner), left out otherwise. E2B's schema has the field optional, and the SDK (2.51) then sends
 * no X-Access-Token, so a non-owner's envd traffic is refused by the router (401).
 */
const tokenField = (envdAccessToken: string | undefined) => (envdAccessToken ? { envdAccessToken } : {});

/**
 * networkFields are SandboxDetail's `allowInternetAccess` (null when the create did not say) and
 * `network` (allowOut, denyOut, allowPublicTraffic as they stand; allowInternetAccess false shows
 * as denyOut 0.0.0.0/0 too, as E2B records it), read from the pod's network annotation.
 */
export function networkFields(pod: V1Pod) {
  const n = networkOf(pod);
  const denyOut = [...(n.denyOut ?? [])];
  if (n.allowInternetAccess === false && !denyOut.includes(ALL_TRAFFIC)) denyOut.push(ALL_TRAFFIC);
  const network = {
    ...(n.allowOut ? { allowOut: n.allowOut } : {}),
    ...(denyOut.length > 0 ? { denyOut } : {}),
    ...(n.allowPublicTraffic !== undefined ? { allowPublicTraffic: n.allowPublicTraffic } : {}),
  };
  return {
    allowInternetAccess: n.allowInternetAccess ?? null,
    ...(Object.keys(network).length > 0 ? { network } : {}),
  };
}

/** ALL_TRAFFIC is E2B's "all traffic" block, what allowInternetAccess false denies. */
const ALL_TRAFFIC = "0.0.0.0/0";

/** trafficField is a private sandbox's trafficAccessToken, to its owner; null otherwise, as E2B answers. */
const trafficField = (trafficAccessToken: string | undefined) => ({
  trafficAccessToken: trafficAccessToken ?? null,
});

/**
 * e2bDetail is E2B's SandboxDetail: the listed fields, the network settings, the domain and, to
 * the sandbox's owner only (the caller passes undefined for anyone else, an admin included), the
 * envd token and, for a private sandbox, its traffic token.
 */
export function e2bDetail(
  pod: V1Pod,
  view: SandboxView,
  settings: E2bSettings,
  envdAccessToken: string | undefined,
  trafficAccessToken?: string,
) {
  return {
    ...e2bListed(pod, view, settings),
    ...networkFields(pod),
    ...tokenField(envdAccessToken),
    ...(trafficAccessToken ? { trafficAccessToken } : {}),
    domain: e2bDomain(settings),
    // E2B's lifecycle: autoPause pauses at the timeout; no sandbox resumes on traffic here.
    lifecycle: { onTimeout: pausesOnTimeout(pod) ? "pause" : "kill", autoResume: false },
  };
}

/** e2bSandbox is E2B's Sandbox, the answer to create and connect; the tokens as e2bDetail's. */
export function e2bSandbox(
  pod: V1Pod,
  view: SandboxView,
  settings: E2bSettings,
  envdAccessToken: string | undefined,
  trafficAccessToken?: string,
) {
  return {
    templateID: templateIdOf(pod, view),
    sandboxID: view.sandboxId,
    clientID: E2B_CLIENT_ID,
    envdVersion: settings.envdVersion,
    ...tokenField(envdAccessToken),
    ...trafficField(trafficAccessToken),
    domain: e2bDomain(settings),
  };
}

/** e2bError is E2B's error body: the HTTP status as `code`, and a message. */
export function e2bError(code: number, message: string) {
  return { code, message };
}
