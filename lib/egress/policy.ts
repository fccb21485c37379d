// A sandbox's own NetworkPolicy: what its egress rules allow, as ipBlocks. Policies add up, so the
// namespace's internet rule (infra/deploy/sandbox-namespace/network-policy.yaml) is granted only
// to pods without the egress label, and a sandbox with rules gets this policy instead: the same
// internet (every address but the private, shared, loopback and link-local ranges) minus denyOut,
// plus each allowOut block (allow wins, as in E2B). DNS stays granted by the namespace policy.
import { EGRESS_CUSTOM, EGRESS_LABEL, SANDBOX_ID_LABEL } from "../crd/keys.ts";
import { type Cidr, contains, formatCidr, isWhole, parseCidr } from "./cidr.ts";
import type { SandboxNetwork } from "./network.ts";

/**
 * INTERNAL_RANGES are the blocks the namespace policy's internet rule leaves out (they hold pods,
 * Services, nodes, the apiserver, the cloud's metadata endpoint): no sandbox policy grants them.
 * test/integration/network-policy.test.ts checks they equal the manifest's `except` lists.
 */
export const INTERNAL_RANGES: readonly string[] = [
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "::1/128",
  "fc00::/7",
  "fe80::/10",
];

const internal = INTERNAL_RANGES.map((r) => parseCidr(r) as Cidr);

/** POLICY_PREFIX starts every sandbox policy's name: `agentbox-egress-<sandboxId>`. */
export const POLICY_PREFIX = "agentbox-egress-";

/** PART_OF labels every policy this control plane writes, as the namespace manifests are labelled. */
const PART_OF = { "app.kubernetes.io/part-of": "agentbox" } as const;

/** egressPolicyName is the deterministic name of a sandbox's policy, so any step finds (and deletes) it. */
export const egressPolicyName = (sandboxId: string) => `${POLICY_PREFIX}${sandboxId}`;

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * canNamePolicy says whether a sandbox id makes a valid policy name (a DNS subdomain): ids minted
 * here always do; one of another component's format (agentbox's) may not, and such a sandbox
 * cannot have egress rules.
 */
export const canNamePolicy = (sandboxId: string) => DNS_SUBDOMAIN.test(egressPolicyName(sandboxId));

/** POLICY_SELECTOR lists every sandbox policy (a label selector): they carry the egress label too. */
export const POLICY_SELECTOR = `${EGRESS_LABEL}=${EGRESS_CUSTOM},${SANDBOX_ID_LABEL}`;

/** IpBlock is a NetworkPolicy peer's ipBlock. */
export interface IpBlock {
  cidr: string;
  except?: string[];
}

/** EgressPolicy is the NetworkPolicy object as written (plain JSON: the apiserver's own field names). */
export interface EgressPolicy {
  apiVersion: "networking.k8s.io/v1";
  kind: "NetworkPolicy";
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    resourceVersion?: string;
    creationTimestamp?: string;
  };
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: ["Egress"];
    egress: { to: { ipBlock: IpBlock }[] }[];
  };
}

/** outermost keeps the blocks no other one contains, in canonical form, sorted, without duplicates. */
function outermost(blocks: readonly Cidr[]): Cidr[] {
  const unique = [...new Map(blocks.map((b) => [formatCidr(b), b])).values()];
  return unique
    .filter((b) => !unique.some((o) => o !== b && contains(o, b)))
    .sort((a, b) => a.family - b.family || (a.network < b.network ? -1 : a.network > b.network ? 1 : 0));
}

/** block is an ipBlock of `cidr` without `except` (only the blocks strictly inside it). */
function block(cidr: Cidr, except: readonly Cidr[]): IpBlock {
  const inside = outermost(except.filter((e) => e.prefix > cidr.prefix && contains(cidr, e)));
  return { cidr: formatCidr(cidr), ...(inside.length > 0 ? { except: inside.map(formatCidr) } : {}) };
}

/** parsed reads a list's blocks, dropping what does not parse (the schemas refused those already). */
const parsed = (list: readonly string[] | undefined) =>
  (list ?? []).map(parseCidr).filter((c): c is Cidr => c !== undefined);

/**
 * egressBlocks are the ipBlocks a sandbox with these settings may reach: for each family not
 * wholly denied, everything minus the internal ranges and denyOut; then each allowOut block minus
 * the internal ranges it contains. 0.0.0.0/0 in denyOut (or allowInternetAccess false) denies
 * IPv6 as well: it is E2B's "all traffic", and an IPv4-only deny would leave a cluster with IPv6
 * egress open. An allowOut block inside an internal range is refused before (internalAllow).
 */
export function egressBlocks(n: SandboxNetwork): IpBlock[] {
  const deny = parsed(n.denyOut);
  const all = n.allowInternetAccess === false || deny.some((d) => d.family === 4 && isWhole(d));
  const blocks: IpBlock[] = [];
  for (const family of [4, 6] as const) {
    const whole = { family, network: 0n, prefix: 0 };
    if (all || deny.some((d) => d.family === family && isWhole(d))) continue;
    blocks.push(block(whole, [...internal, ...deny.filter((d) => d.family === family)]));
  }
  for (const allow of outermost(parsed(n.allowOut))) {
    if (internal.some((r) => contains(r, allow))) continue;
    blocks.push(block(allow, internal));
  }
  return blocks;
}

/**
 * internalAllow is the first allowOut entry that lies inside an internal range (it would reach
 * other pods, nodes or the apiserver: another tenant's sandbox among them), with that range; such
 * a rule is a 400. A block that contains internal ranges is fine: they stay excepted.
 */
export function internalAllow(allowOut: readonly string[]): { entry: string; range: string } | undefined {
  for (const entry of allowOut) {
    const c = parseCidr(entry);
    const range = c && internal.find((r) => contains(r, c));
    if (range) return { entry, range: formatCidr(range) };
  }
  return undefined;
}

/**
 * egressPolicy is the NetworkPolicy of sandbox `sandboxId` in `namespace`: it selects the pod
 * carrying both that sandbox id and the egress label (so a pod never inherits it: the next
 * sandbox on the pod has another id), and allows egress to egressBlocks only (no blocks: none
 * beyond what the namespace policy gives every pod, DNS).
 */
export function egressPolicy(namespace: string, sandboxId: string, n: SandboxNetwork): EgressPolicy {
  const blocks = egressBlocks(n);
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: {
      name: egressPolicyName(sandboxId),
      namespace,
      labels: { ...PART_OF, [EGRESS_LABEL]: EGRESS_CUSTOM, [SANDBOX_ID_LABEL]: sandboxId },
    },
    spec: {
      podSelector: { matchLabels: { [SANDBOX_ID_LABEL]: sandboxId, [EGRESS_LABEL]: EGRESS_CUSTOM } },
      policyTypes: ["Egress"],
      egress: blocks.length > 0 ? [{ to: blocks.map((ipBlock) => ({ ipBlock })) }] : [],
    },
  };
}
