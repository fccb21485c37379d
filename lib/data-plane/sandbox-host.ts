// How a sandbox port is addressed by name, as the e2b SDK builds it (ConnectionConfig.getHost):
// `<port>-<sandboxId>.<domain>`, one DNS label in front of the sandbox domain. SDKs before 1.7
// put the create answer's clientID after the id (`<port>-<id>-<clientID>`); ours is always
// E2B_CLIENT_ID, so that suffix is dropped. (A sandbox id of another format that itself ends in
// `-agentbox` is then addressable only in the old form; ids this control plane mints never do.)

/** E2B_CLIENT_ID is the clientID every E2B answer shows (SDKs before 1.7 put it in sandbox hosts). */
export const E2B_CLIENT_ID = "agentbox";

/** ENVD_PORT is envd's port as the SDK addresses it (ConnectionConfig.envdPort). */
export const ENVD_PORT = 49983;

/** SandboxAddress is a sandbox port named by a request. */
export interface SandboxAddress {
  port: number;
  sandboxId: string;
}

/** HostProblem says why a Host names no sandbox port: each is a 400. */
export type HostProblem = "not-under-domain" | "malformed" | "bad-port";

const SANDBOX_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LEGACY_SUFFIX = `-${E2B_CLIENT_ID}`;

/**
 * parsePort reads a port as a request names it: decimal digits without a leading zero, 1..65535;
 * undefined otherwise (so one port has one spelling).
 */
export function parsePort(text: string): number | undefined {
  if (!/^[1-9][0-9]{0,4}$/.test(text)) return undefined;
  const port = Number(text);
  return port <= 65535 ? port : undefined;
}

/**
 * hostnameOf is a Host header's name: lower case, without the listener's port (`name:8443`,
 * `[::1]:8443`) or a trailing dot; undefined when the value cannot be a host.
 */
export function hostnameOf(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  const bracketed = /^(\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$/.exec(h);
  if (bracketed) return bracketed[1];
  const named = /^([a-z0-9._-]+?)\.?(?::[0-9]{1,5})?$/.exec(h);
  return named?.[1] || undefined;
}

/**
 * parseSandboxHost reads `<port>-<sandboxId>.<domain>` (or `<port>-<id>-agentbox.<domain>`) from a
 * hostname (hostnameOf's), or says why it names no sandbox port: not under the domain, more than
 * one label before it or no `<port>-<id>` shape (malformed), or a port outside 1..65535.
 */
export function parseSandboxHost(
  hostname: string,
  domain: string,
): { ok: true; address: SandboxAddress } | { ok: false; problem: HostProblem } {
  const suffix = `.${domain}`;
  if (!hostname.endsWith(suffix)) return { ok: false, problem: "not-under-domain" };
  const label = hostname.slice(0, -suffix.length);
  const dash = label.indexOf("-");
  if (label.includes(".") || dash < 0) return { ok: false, problem: "malformed" };
  const port = parsePort(label.slice(0, dash));
  if (port === undefined) return { ok: false, problem: "bad-port" };
  let sandboxId = label.slice(dash + 1);
  if (sandboxId.length > LEGACY_SUFFIX.length && sandboxId.endsWith(LEGACY_SUFFIX))
    sandboxId = sandboxId.slice(0, -LEGACY_SUFFIX.length);
  if (!SANDBOX_LABEL.test(sandboxId)) return { ok: false, problem: "malformed" };
  return { ok: true, address: { port, sandboxId } };
}

/** sandboxHost is the name of a sandbox port: `<port>-<sandboxId>.<domain>` (what the SDK builds). */
export function sandboxHost(port: number | string, sandboxId: string, domain: string): string {
  return `${port}-${sandboxId}.${domain}`;
}
