// The sandbox data plane's decisions, as pure functions a router (hosts/node) applies to each
// request before it forwards a byte. They are E2B's, so the e2b SDK behaves as it does on E2B:
//
// 1. Which sandbox port (requestTarget): by name, `<port>-<sandboxId>.<domain>` (also the pre-1.7
//    `<port>-<id>-<clientID>`), or by the E2b-Sandbox-Id and E2b-Sandbox-Port headers when the
//    Host is the router itself (an IP, `localhost`, a configured router name): the SDK's
//    E2B_SANDBOX_URL mode. A bad Host or header is a 400 naming it, never a crash.
// 2. envd's control routes (/init, /upgrade, snapshot routes; envdPath) are a 404 for any method
//    and spelling, before the sandbox is looked up, so the answer says nothing about it.
// 3. Only a Running sandbox is reached. Unknown, not yet running, stopping or released: 502 with
//    `{sandboxId, message: "The sandbox was not found", code: 502}`, E2B's answer: the SDK reads
//    502 as "not running" (isRunning false, its dropped-connection probe says killed) and raises
//    TimeoutError (REST), or SandboxNotFoundError / TimeoutError (Connect: Unavailable).
// 4. envd (port 49983) needs X-Access-Token equal to the sandbox's token (constant time) except
//    GET /health, and /files without a token but with a `signature` (envd checks the signature).
//    A wrong or missing token is a 401 (AuthenticationError); the envd of a sandbox whose token
//    is unknown (no sealing key) is reached by no one but /health.
// 5. Other ports follow E2B's traffic-token rule: public unless the sandbox requires a traffic
//    token, then `e2b-traffic-access-token` must equal it (403 missing or invalid). Our sandboxes
//    cannot require one yet (a create's `network` is refused), so their other ports are public, as
//    E2B's are by default: the URL, with its unguessable id, is the capability.
// 6. What is forwarded: end-to-end headers only (endToEndHeaders).
//
// Error bodies are JSON (`application/json`, with CORS `*` as E2B's, so a browser can read them).
import { constantTimeEqual } from "./constant-time-equal.ts";
import { type EnvdPath, envdPath } from "./envd-paths.ts";
import { type HeaderBag, single } from "./request-target.ts";
import { ENVD_PORT, type SandboxAddress } from "./sandbox-host.ts";

/** ACCESS_TOKEN_HEADER carries the envd access token; TRAFFIC_TOKEN_HEADER the traffic token. */
export const ACCESS_TOKEN_HEADER = "x-access-token";
export const TRAFFIC_TOKEN_HEADER = "e2b-traffic-access-token";

/** RouteRequest is what the decision reads of a request. */
export interface RouteRequest {
  method: string;
  /** target is the request target as sent (`/path?query`, node:http's req.url). */
  target: string;
  headers: HeaderBag;
}

/** SandboxRouteState is what the router knows of the addressed sandbox, from its watch. */
export interface SandboxRouteState {
  /** running: the sandbox is Running (its post-start hooks done); nothing else is reached. */
  running: boolean;
  /** envdToken is the sandbox's envd access token; unset (no sealing key), envd is unreachable. */
  envdToken?: string;
  /** trafficToken, when set, is required on every other port (E2B's allowPublicTraffic: false). */
  trafficToken?: string;
}

/** DataPlaneError is an E2B-shaped refusal: status and JSON body. */
export interface DataPlaneError {
  status: number;
  headers: Record<string, string>;
  body: { sandboxId?: string; message: string; code: number; path?: string };
}

/** RouteDecision: forward to the sandbox port (envd or another), or refuse. */
export type RouteDecision =
  | { action: "forward"; sandboxId: string; port: number; portClass: "envd" | "other" }
  | ({ action: "refuse" } & DataPlaneError);

/** ERROR_HEADERS go with every refusal. */
export const ERROR_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
  "access-control-allow-origin": "*",
};

/** dataPlaneError is a refusal in E2B's shape (`code` repeats the status). */
export function dataPlaneError(
  status: number,
  message: string,
  extra: { sandboxId?: string; path?: string } = {},
) {
  return { status, headers: { ...ERROR_HEADERS }, body: { ...extra, message, code: status } };
}

const refuse = (status: number, message: string, extra: { sandboxId?: string; path?: string } = {}) =>
  ({ action: "refuse", ...dataPlaneError(status, message, extra) }) as const;

/** hasSignature: the query carries a non-empty `signature` (a signed /files URL). */
function hasSignature(target: string): boolean {
  const q = target.indexOf("?");
  if (q < 0) return false;
  try {
    return (new URLSearchParams(target.slice(q + 1)).get("signature") ?? "") !== "";
  } catch {
    return false;
  }
}

/** envdDecision applies rule 4 to a Running sandbox's envd request. */
function envdDecision(
  req: RouteRequest,
  kind: EnvdPath["kind"],
  address: SandboxAddress,
  sandbox: SandboxRouteState,
): RouteDecision {
  const forward = { action: "forward", ...address, portClass: "envd" } as const;
  const { sandboxId } = address;
  if (kind === "health") return forward;
  if (!sandbox.envdToken)
    return refuse(401, "this sandbox's envd is not reachable: the control plane has no sealing key", {
      sandboxId,
    });
  if (req.headers[ACCESS_TOKEN_HEADER] === undefined) {
    if (kind === "files" && hasSignature(req.target)) return forward;
    return refuse(401, "the X-Access-Token header is missing: present the sandbox's envdAccessToken", {
      sandboxId,
    });
  }
  const token = single(req.headers, ACCESS_TOKEN_HEADER);
  if (token === undefined || !constantTimeEqual(token, sandbox.envdToken))
    return refuse(401, "the X-Access-Token header is not this sandbox's envdAccessToken", { sandboxId });
  return forward;
}

/**
 * decideRoute decides what becomes of a request for a sandbox port (requestTarget's address),
 * given the sandbox's state (undefined when the router knows no such sandbox): forward, or an
 * E2B-shaped refusal, by rules 2 to 5 above. Pure and total: any input gets a decision.
 */
export function decideRoute(
  req: RouteRequest,
  address: SandboxAddress,
  sandbox: SandboxRouteState | undefined,
): RouteDecision {
  const { sandboxId, port } = address;
  const rawPath = req.target.split("?", 1)[0] ?? "";
  const path = port === ENVD_PORT ? envdPath(req.method, rawPath) : undefined;
  if (path?.kind === "bad") return refuse(400, "the request path is not a valid path", { sandboxId });
  if (path?.kind === "internal")
    return refuse(
      404,
      "this envd route is reserved for the control plane and is not reachable through the router",
      {
        path: path.path,
      },
    );
  if (!sandbox?.running) return refuse(502, "The sandbox was not found", { sandboxId });
  if (path) return envdDecision(req, path.kind, address, sandbox);
  const forward = { action: "forward", sandboxId, port, portClass: "other" } as const;
  if (sandbox.trafficToken === undefined) return forward;
  const presented = single(req.headers, TRAFFIC_TOKEN_HEADER);
  if (presented === undefined)
    return refuse(
      403,
      `Sandbox is secured with traffic access token. Token header '${TRAFFIC_TOKEN_HEADER}' is missing`,
      { sandboxId },
    );
  if (!constantTimeEqual(presented, sandbox.trafficToken))
    return refuse(
      403,
      `Sandbox is secured with traffic access token. Provided token in header '${TRAFFIC_TOKEN_HEADER}' is invalid`,
      { sandboxId },
    );
  return forward;
}
