// The sandbox data plane's decisions, as pure functions a router (hosts/node) applies to each
// request before it forwards a byte. They are E2B's, so the e2b SDK behaves as it does on E2B:
//
// 1. Which sandbox port (requestTarget): by name, `<port>-<sandboxId>.<domain>` (also the pre-1.7
//    `<port>-<id>-<clientID>`), or by the E2b-Sandbox-Id and E2b-Sandbox-Port headers when the
//    Host is the router itself (an IP, `localhost`, a configured router name): the SDK's
//    E2B_SANDBOX_URL mode. A bad Host or header is a 400 naming it, never a crash.
// 2. envd's ports are 49983 (what the SDK always names) and the port envd listens on in the pods
//    (AGENTBOX_ENVD_PORT), whichever a request names: the rules below hold on both.
// 3. envd's control routes (/init, /upgrade, snapshot routes; envdPath) are a 404 for any method
//    and spelling, before the sandbox is looked up, so the answer says nothing about it.
// 4. Only a Running sandbox is reached. Unknown, not yet running, stopping or released: 502 with
//    `{sandboxId, message: "The sandbox was not found", code: 502}`, E2B's answer: the SDK reads
//    502 as "not running" (isRunning false, its dropped-connection probe says killed) and raises
//    TimeoutError (REST), or SandboxNotFoundError / TimeoutError (Connect: Unavailable). A sandbox
//    whose template runs no envd: every request to an envd port is a 404.
// 5. envd needs X-Access-Token equal to the sandbox's token (constant time) except GET /health,
//    and GET/POST /files without a token but with a signature the router checks itself
//    (file-signature.ts): the real envd checks nothing while it holds no token, so the router is
//    the only guard. A wrong or missing token or signature is a 401 (AuthenticationError); the
//    envd of a sandbox whose token is unknown (no sealing key) is reached by no one but /health.
//    Only an authenticated request is the sandbox's activity: a bare /health is not.
// 6. Other ports follow E2B's traffic-token rule: public unless the sandbox requires a traffic
//    token, then `e2b-traffic-access-token` must equal it (403 missing or invalid). Our sandboxes
//    cannot require one yet (a create's `network` is refused), so their other ports are public, as
//    E2B's are by default: the URL, with its unguessable id, is the capability.
// 7. What is forwarded: end-to-end headers only (endToEndHeaders), the body re-framed
//    (request-framing.ts).
//
// Error bodies are JSON (`application/json`, with CORS `*` as E2B's, so a browser can read them).
import { constantTimeEqual } from "./constant-time-equal.ts";
import { type EnvdPath, envdPath } from "./envd-paths.ts";
import { fileSignatureProblem } from "./file-signature.ts";
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
  /** runsEnvd false: the sandbox's template runs no envd, so its envd ports are a 404. */
  runsEnvd?: boolean;
}

/** RouteContext is what the decision needs of the router: envd's pod port and the clock. */
export interface RouteContext {
  /** envdPort is the port envd listens on in the pods (AGENTBOX_ENVD_PORT); 49983 is envd's too. */
  envdPort: number;
  /** nowSeconds is the time (Unix seconds) a signed URL's expiration is compared with. */
  nowSeconds: number;
}

/** DataPlaneError is an E2B-shaped refusal: status and JSON body. */
export interface DataPlaneError {
  status: number;
  headers: Record<string, string>;
  body: { sandboxId?: string; message: string; code: number; path?: string };
}

/**
 * RouteDecision: forward to the sandbox port (envd or another), or refuse. `active` says whether
 * the request is the sandbox's activity (everything but an unauthenticated envd /health).
 */
export type RouteDecision =
  | { action: "forward"; sandboxId: string; port: number; portClass: "envd" | "other"; active: boolean }
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

/** isEnvdPort: a port a request names that is envd's (the SDK's 49983, or the pods' own). */
export function isEnvdPort(port: number, envdPort: number): boolean {
  return port === ENVD_PORT || port === envdPort;
}

/** envdDecision applies rule 5 to a Running sandbox's envd request. */
function envdDecision(
  req: RouteRequest,
  kind: EnvdPath["kind"],
  address: SandboxAddress,
  sandbox: SandboxRouteState,
  nowSeconds: number,
): RouteDecision {
  const { sandboxId, port } = address;
  const forward = { action: "forward", sandboxId, port, portClass: "envd", active: true } as const;
  const presented = req.headers[ACCESS_TOKEN_HEADER];
  if (kind === "health") {
    // /health is public; only the owner's (its token) is activity, so a prober keeps nothing alive.
    const own =
      presented !== undefined &&
      sandbox.envdToken !== undefined &&
      constantTimeEqual(single(req.headers, ACCESS_TOKEN_HEADER) ?? "", sandbox.envdToken);
    return own ? forward : { ...forward, active: false };
  }
  if (!sandbox.envdToken)
    return refuse(401, "this sandbox's envd is not reachable: the control plane has no sealing key", {
      sandboxId,
    });
  if (presented === undefined) {
    if (kind !== "files")
      return refuse(401, "the X-Access-Token header is missing: present the sandbox's envdAccessToken", {
        sandboxId,
      });
    const problem = fileSignatureProblem(req.method, req.target, sandbox.envdToken, nowSeconds);
    if (problem === undefined) return forward;
    return refuse(401, `the X-Access-Token header is missing and the URL is not signed: ${problem}`, {
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
 * given the sandbox's state (undefined when the router knows no such sandbox) and the router's
 * context (envd's pod port, the time): forward, or an E2B-shaped refusal, by rules 2 to 6 above.
 * Pure and total: any input gets a decision.
 */
export function decideRoute(
  req: RouteRequest,
  address: SandboxAddress,
  sandbox: SandboxRouteState | undefined,
  context: RouteContext,
): RouteDecision {
  const { sandboxId, port } = address;
  const envd = isEnvdPort(port, context.envdPort);
  const q = req.target.indexOf("?");
  const path = envd ? envdPath(req.method, q < 0 ? req.target : req.target.slice(0, q)) : undefined;
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
  if (path && sandbox.runsEnvd === false)
    return refuse(404, `this sandbox runs no envd: port ${port} is envd's and is not served`, { sandboxId });
  if (path) return envdDecision(req, path.kind, address, sandbox, context.nowSeconds);
  const forward = { action: "forward", sandboxId, port, portClass: "other", active: true } as const;
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
