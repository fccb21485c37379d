// Which sandbox port a request is for. By name (`<port>-<id>.<domain>`), or, when the request is
// addressed to the router itself (an IP, `localhost`, or one of the router's own names), by the
// headers the e2b SDK sends on every envd request (E2b-Sandbox-Id, E2b-Sandbox-Port): with
// E2B_SANDBOX_URL set, the SDK sends all envd traffic to that one URL and names the sandbox in them.
import { isSandboxId } from "../lifecycle/sandbox-ids.ts";
import { hostnameOf, parsePort, parseSandboxHost, type SandboxAddress } from "./sandbox-host.ts";

/** SANDBOX_ID_HEADER and SANDBOX_PORT_HEADER name the sandbox port in header routing (lower case). */
export const SANDBOX_ID_HEADER = "e2b-sandbox-id";
export const SANDBOX_PORT_HEADER = "e2b-sandbox-port";

/** HeaderBag is a request's headers as node:http gives them: lower-case names. */
export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Addressing is how the router is reached: its sandbox domain, and its own names. */
export interface Addressing {
  /** domain is the sandbox domain (checkSandboxDomain's); unset, only header routing works. */
  domain?: string;
  /** routerNames are the router's own host names (lower case), where header routing applies. */
  routerNames?: readonly string[];
}

/** TargetedRequest is a request's sandbox port, and how it was named. */
export type RequestTarget =
  | ({ ok: true; via: "host" | "headers" } & SandboxAddress)
  | { ok: false; status: 400; message: string };

const IPV4 =
  /^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/;

/** isRouterItself: an IP literal, localhost, or one of the router's names: header routing applies. */
function isRouterItself(hostname: string, names: readonly string[]): boolean {
  return (
    hostname.startsWith("[") || IPV4.test(hostname) || hostname === "localhost" || names.includes(hostname)
  );
}

/** single is a header's one value; undefined when absent, empty or repeated. */
export function single(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name];
  const one = typeof value === "string" ? value : value?.length === 1 ? value[0] : undefined;
  return one?.trim() || undefined;
}

const bad = (message: string): RequestTarget => ({ ok: false, status: 400, message });

/** byHeaders reads E2b-Sandbox-Id and E2b-Sandbox-Port, naming the header that is missing or bad. */
function byHeaders(headers: HeaderBag): RequestTarget {
  const id = single(headers, SANDBOX_ID_HEADER);
  const portText = single(headers, SANDBOX_PORT_HEADER);
  if (!id && !portText)
    return bad(
      "this host is the router itself: name the sandbox with the E2b-Sandbox-Id and E2b-Sandbox-Port headers",
    );
  if (!id) return bad("the E2b-Sandbox-Id header is missing (one value)");
  if (!portText) return bad("the E2b-Sandbox-Port header is missing (one value)");
  if (!isSandboxId(id)) return bad("the E2b-Sandbox-Id header is not a sandbox id");
  const port = parsePort(portText);
  if (port === undefined) return bad("the E2b-Sandbox-Port header is not a port (1-65535)");
  return { ok: true, via: "headers", port, sandboxId: id };
}

/**
 * requestTarget finds the sandbox port a request is for, from its Host (or HTTP/2 :authority) and
 * headers, or a 400 saying what is wrong. A Host that is an IP, `localhost` or a router name is
 * routed by the E2b-Sandbox-* headers (both required); any other must be a sandbox host under the
 * domain. Never throws, whatever the input.
 */
export function requestTarget(
  host: string | undefined,
  headers: HeaderBag,
  addressing: Addressing,
): RequestTarget {
  const hostname = host === undefined ? undefined : hostnameOf(host);
  if (!hostname) return bad("the request's Host is missing or not a host name");
  if (isRouterItself(hostname, addressing.routerNames ?? [])) return byHeaders(headers);
  const domain = addressing.domain;
  if (!domain)
    return bad(
      `no sandbox domain is configured: ${hostname} names no sandbox (address the router by IP or name with the E2b-Sandbox-Id and E2b-Sandbox-Port headers)`,
    );
  const parsed = parseSandboxHost(hostname, domain);
  if (parsed.ok) return { ok: true, via: "host", ...parsed.address };
  if (parsed.problem === "not-under-domain") return bad(`the host ${hostname} is not under ${domain}`);
  if (parsed.problem === "bad-port") return bad(`the host ${hostname} names no port in 1-65535`);
  return bad(`the host ${hostname} is not <port>-<sandboxId>.${domain}`);
}
