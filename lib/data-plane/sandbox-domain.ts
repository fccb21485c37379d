// The sandbox domain is where sandbox traffic is addressed: `<port>-<sandboxId>.<domain>`, one
// wildcard DNS name and certificate for the router. The e2b SDK sends the traffic of E2B's own
// domains to E2B's shared host (`https://sandbox.<domain>`), so such a domain would hand our
// sandboxes' tokens to E2B: refused, as are names that are not DNS names.

/** E2B_SDK_DOMAINS are the domains the e2b SDK (2.51.0, supportedDomains) routes to E2B itself. */
export const E2B_SDK_DOMAINS: readonly string[] = ["e2b.app", "e2b.dev", "e2b.pro", "e2b-staging.dev"];

/**
 * MAX_SANDBOX_DOMAIN_LENGTH leaves room for the longest sandbox label (63 characters) and its dot
 * within a DNS name's 253 characters.
 */
export const MAX_SANDBOX_DOMAIN_LENGTH = 253 - 64;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * checkSandboxDomain validates a configured sandbox domain (AGENTBOX_SANDBOX_DOMAIN, the Worker's
 * SANDBOX_DOMAIN): a DNS name of lowercase letters, digits and hyphens, without scheme, port, path
 * or trailing dot, short enough for `<port>-<id>.` in front, and not E2B's (an `e2b.<tld>` name or
 * one under it, or any domain the SDK sends to E2B). Upper case is read as lower case.
 */
export function checkSandboxDomain(
  text: string,
): { ok: true; domain: string } | { ok: false; error: string } {
  const domain = text.trim().toLowerCase();
  const example = "a DNS name such as sandbox.example.com";
  if (domain === "") return { ok: false, error: `must be ${example}` };
  if (/[/:]/.test(domain)) return { ok: false, error: `must be ${example}, without scheme, port or path` };
  if (domain.length > MAX_SANDBOX_DOMAIN_LENGTH)
    return { ok: false, error: `must have at most ${MAX_SANDBOX_DOMAIN_LENGTH} characters` };
  const labels = domain.split(".");
  const bad = labels.find((label) => !DNS_LABEL.test(label));
  if (bad !== undefined)
    return {
      ok: false,
      error: `must be ${example}: ${JSON.stringify(bad)} is not a DNS label (letters, digits, inner hyphens; no trailing dot)`,
    };
  const e2b =
    labels.at(-2) === "e2b" || E2B_SDK_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
  if (e2b)
    return {
      ok: false,
      error: "must be a domain of yours, not E2B's: the e2b SDK would send this sandbox traffic to E2B",
    };
  return { ok: true, domain };
}
