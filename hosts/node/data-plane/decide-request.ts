// One request's fate, from lib/data-plane's rules and this host's route table: whether its target
// is a path at all (targetProblem), which sandbox port it names (requestTarget), whether it may go
// there (decideRoute, with the sandbox's token), and where that is (the pod IP and port). Shared by
// plain requests, HTTP/2 streams and upgrades.

import { type PodRoute, upstreamPort } from "../../../lib/data-plane/pod-route.ts";
import { targetProblem } from "../../../lib/data-plane/request-framing.ts";
import { type Addressing, type HeaderBag, requestTarget } from "../../../lib/data-plane/request-target.ts";
import {
  type DataPlaneError,
  dataPlaneError,
  decideRoute,
  type RouteDecision,
} from "../../../lib/data-plane/route.ts";
import { waitAtMost } from "../../../lib/util/with-timeout.ts";
import type { RouteTable } from "./route-table.ts";
import type { Traffic } from "./traffic.ts";
import type { Upstreams } from "./upstreams.ts";

/** SYNC_WAIT_MS: a request that comes before the first list waits this long for it. */
const SYNC_WAIT_MS = 5_000;

/** Routing is what deciding needs (addressing, routes, tokens, envd's pod port) and where traffic is observed. */
export interface Routing {
  addressing: Addressing;
  routes: RouteTable;
  upstreams: Upstreams;
  envdPort: number;
  traffic: Traffic;
}

/** Decided is a request to forward (to route.podIP:port) or an E2B-shaped refusal. */
export type Decided =
  | {
      ok: true;
      route: PodRoute;
      port: number;
      portClass: Extract<RouteDecision, { action: "forward" }>["portClass"];
      /** active: the request is the sandbox's activity (not a bare envd /health). */
      active: boolean;
    }
  | { ok: false; error: DataPlaneError };

/** waitSynced waits for the route table's first list, at most SYNC_WAIT_MS. */
async function waitSynced(routes: RouteTable): Promise<boolean> {
  if (routes.ready) return true;
  await waitAtMost(routes.synced, SYNC_WAIT_MS);
  return routes.ready;
}

/**
 * decideRequest decides a request by its Host (or :authority), method, target and headers. Never
 * throws: anything unexpected is a refusal.
 */
export async function decideRequest(
  routing: Routing,
  req: { host: string | undefined; method: string; target: string; headers: HeaderBag },
): Promise<Decided> {
  const problem = targetProblem(req.target);
  if (problem !== undefined) return { ok: false, error: dataPlaneError(400, problem) };
  const target = requestTarget(req.host, req.headers, routing.addressing);
  if (!target.ok) return { ok: false, error: dataPlaneError(target.status, target.message) };
  if (!(await waitSynced(routing.routes)))
    return {
      ok: false,
      error: dataPlaneError(503, "the router is starting: it has not read where sandboxes run yet", {
        sandboxId: target.sandboxId,
      }),
    };
  const address = { sandboxId: target.sandboxId, port: target.port };
  const route = await routing.routes.lookup(target.sandboxId);
  const envdToken = route ? await routing.upstreams.tokenFor(target.sandboxId, route.incarnation) : undefined;
  const trafficToken = route?.privateTraffic
    ? await routing.upstreams.trafficTokenFor(target.sandboxId)
    : undefined;
  // The tokens are derived asynchronously: the route may have gone meanwhile.
  const now = routing.routes.route(target.sandboxId);
  // A private sandbox on a router without the sealing key has no token to compare: its ports other
  // than envd's are closed (an unguessable token nobody holds), never open.
  const required = now?.privateTraffic ? (trafficToken ?? `unset:${crypto.randomUUID()}`) : undefined;
  const state = now
    ? {
        running: true,
        runsEnvd: now.runsEnvd,
        ...(envdToken ? { envdToken } : {}),
        ...(required ? { trafficToken: required } : {}),
      }
    : undefined;
  const decision = decideRoute(
    { method: req.method, target: req.target, headers: req.headers },
    address,
    state,
    {
      envdPort: routing.envdPort,
      nowSeconds: Math.floor(Date.now() / 1000),
    },
  );
  if (decision.action === "refuse") {
    // A route held but not confirmed (its pod's re-read failed, or had to wait its turn) is not
    // "not found": the SDK takes a 502 for a killed sandbox. A 503 says try again.
    if (decision.status === 502 && !now && routing.routes.holds(target.sandboxId)) {
      const unconfirmed = dataPlaneError(
        503,
        "the router cannot confirm where the sandbox runs right now; try again",
        { sandboxId: target.sandboxId },
      );
      unconfirmed.headers["retry-after"] = "1";
      return { ok: false, error: unconfirmed };
    }
    const { status, headers, body } = decision;
    return { ok: false, error: { status, headers, body } };
  }
  if (!now)
    return {
      ok: false,
      error: dataPlaneError(502, "The sandbox was not found", { sandboxId: target.sandboxId }),
    };
  return {
    ok: true,
    route: now,
    port: upstreamPort(decision.port, routing.envdPort),
    portClass: decision.portClass,
    active: decision.active,
  };
}
