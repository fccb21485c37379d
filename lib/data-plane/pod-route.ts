// Where the router sends a sandbox's traffic, read from its pod as the watch reports it. A route
// exists only while the sandbox is Running as the API shows it (post-start hooks done) and its pod
// has an IP: a starting, stopping, idle or relabelled pod has none, so a pod IP reused by another
// sandbox is never reached through an old sandbox's route (routes are keyed by sandbox id). Only a
// pod a SandboxPool controls carries a route (route-owner.ts): the id label alone is anyone's.

import type { V1Pod } from "@kubernetes/client-node";
import {
  ENVD_ANNOTATION,
  IDLE_TIMEOUT_ANNOTATION,
  LAST_ACTIVE_ANNOTATION,
  SANDBOX_ID_LABEL,
  SANDBOX_PHASE,
  TRAFFIC_ANNOTATION,
  TRAFFIC_PRIVATE,
} from "../crd/keys.ts";
import { apiPhaseOf, sandboxIdOf } from "../lifecycle/api-phase.ts";
import { incarnationOf } from "../lifecycle/incarnation.ts";
import { routeOwnerOf } from "./route-owner.ts";
import { ENVD_PORT } from "./sandbox-host.ts";

/** PodRoute is a Running sandbox's upstream: its pod's IP, and which pod that is. */
export interface PodRoute {
  sandboxId: string;
  podIP: string;
  namespace: string;
  podName: string;
  /** podUid tells a pod from a later one of the same name (a slot's replacement). */
  podUid: string;
  /** lastActive is the pod's last-active annotation (the router's activity writes compare to it). */
  lastActive?: string;
  /** idleTimeoutSeconds is the sandbox's idle timeout, when it has one. */
  idleTimeoutSeconds?: number;
  /** runsEnvd is false when the pod's template says it runs no envd (ENVD_ANNOTATION `none`). */
  runsEnvd: boolean;
  /** privateTraffic: the sandbox's ports but envd's need its traffic token (TRAFFIC_ANNOTATION). */
  privateTraffic?: true;
  /** incarnation counts the sandbox's resumes; its envd token is derived from it (ADR 0045). */
  incarnation?: number;
}

/**
 * podRoute is the route a pod gives its sandbox, or undefined: no sandbox-id label (the watch's
 * selection), not Running (or hooks pending), no pod IP, an id label and annotation that
 * disagree (a pod between two claims), a host-network pod, or no pool's controlling ownerReference (routeOwnerOf; the
 * route table also reads that pool before it trusts the reference). Running is as the API shows
 * it (apiPhaseOf).
 */
export function podRoute(pod: V1Pod): PodRoute | undefined {
  const label = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
  const podIP = pod.status?.podIP;
  if (!label || sandboxIdOf(pod) !== label || apiPhaseOf(pod) !== SANDBOX_PHASE.RUNNING || !podIP)
    return undefined;
  if (!routeOwnerOf(pod)) return undefined;
  // A host-network pod's IP is its node's: traffic for the sandbox would reach the node's own
  // services. Admission refuses such templates; pods made before that rule never route either.
  if (pod.spec?.hostNetwork || podIP === pod.status?.hostIP) return undefined;
  const annotations = pod.metadata?.annotations ?? {};
  const lastActive = annotations[LAST_ACTIVE_ANNOTATION];
  const idleTimeout = Number(annotations[IDLE_TIMEOUT_ANNOTATION]);
  return {
    sandboxId: label,
    podIP,
    namespace: pod.metadata?.namespace ?? "",
    podName: pod.metadata?.name ?? "",
    podUid: pod.metadata?.uid ?? "",
    runsEnvd: annotations[ENVD_ANNOTATION] !== "none",
    ...(annotations[TRAFFIC_ANNOTATION] === TRAFFIC_PRIVATE ? { privateTraffic: true as const } : {}),
    ...(lastActive ? { lastActive } : {}),
    ...(incarnationOf(pod) > 0 ? { incarnation: incarnationOf(pod) } : {}),
    ...(Number.isFinite(idleTimeout) && idleTimeout > 0 ? { idleTimeoutSeconds: idleTimeout } : {}),
  };
}

/**
 * upstreamPort is the pod port a sandbox port is served on: envd's (49983 as the SDK names it)
 * is wherever the pods' envd listens (AGENTBOX_ENVD_PORT; the stand-in's on a dev cluster),
 * every other port is the same number.
 */
export function upstreamPort(port: number, envdPort: number): number {
  return port === ENVD_PORT ? envdPort : port;
}
