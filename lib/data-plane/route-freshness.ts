// When the router may use a route it holds without asking the apiserver again. Routes come from a
// watch, and a watch that fails or lags keeps every route it last saw: a pod released and claimed
// again in place keeps its IP, so an old sandbox's route would reach the next tenant. A route is
// trusted while it, or the table as a whole (a list, any watch event or bookmark), was confirmed
// within ROUTE_TRUST_MS; past that it is read again (its pod, by name) before use.
import type { V1Pod } from "@kubernetes/client-node";
import { type PodRoute, podRoute } from "./pod-route.ts";

/**
 * ROUTE_TRUST_MS bounds how old what the router knows of a route may be when it uses it: 10 s,
 * well above how often a busy cluster's watch hears something, and short next to how long a
 * released pod takes to be claimed again (its idle container is restarted first).
 */
export const ROUTE_TRUST_MS = 10_000;

/** Confirmed says when a route was last confirmed, and when the table as a whole last was. */
export interface Confirmed {
  /** routeAt: the route's pod was last read or reported by the watch (ms). */
  routeAt: number;
  /** tableAt: the last list or watch event (bookmarks too): everything before it is in (ms). */
  tableAt: number;
}

/** routeTrusted says whether a route may be used at `now` without reading its pod again. */
export function routeTrusted(confirmed: Confirmed, now: number, boundMs: number = ROUTE_TRUST_MS): boolean {
  return now - Math.max(confirmed.routeAt, confirmed.tableAt) <= boundMs;
}

/**
 * recheckKeeps says whether a route survives a fresh read of its pod (undefined: the pod is
 * gone): only when it is the same pod (uid), still Running for the same sandbox (the id label
 * and annotation, and a pool's controlling ownerReference: podRoute) at the same IP. Anything
 * else (released, claimed again by another sandbox, replaced, moved) drops the route for good.
 */
export function recheckKeeps(route: PodRoute, pod: V1Pod | undefined): boolean {
  if (!pod || pod.metadata?.uid !== route.podUid) return false;
  const now = podRoute(pod);
  return now?.sandboxId === route.sandboxId && now.podIP === route.podIP;
}
