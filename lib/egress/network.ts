// A sandbox's network settings as the API takes them (E2B's allowOut, denyOut, allowInternetAccess
// and allowPublicTraffic; the native API's `network` is the same), kept on its pod as one
// annotation so a GET shows them back, and the claim's marks that carry them.
import {
  EGRESS_CUSTOM,
  EGRESS_LABEL,
  NETWORK_ANNOTATION,
  TRAFFIC_ANNOTATION,
  TRAFFIC_PRIVATE,
} from "../crd/keys.ts";

/** SandboxNetwork is what a create or a network update asked for; every field optional. */
export interface SandboxNetwork {
  /** allowOut: blocks (CIDRs, IPs) the sandbox may reach, even inside a denied block. */
  allowOut?: string[];
  /** denyOut: blocks it may not reach (0.0.0.0/0 denies IPv6 too: E2B's "all traffic"). */
  denyOut?: string[];
  /** allowInternetAccess false is denyOut 0.0.0.0/0 (E2B); unset: not said either way. */
  allowInternetAccess?: boolean;
  /** allowPublicTraffic false: every port but envd's needs the sandbox's traffic token. */
  allowPublicTraffic?: boolean;
}

/**
 * hasEgressRules says whether the settings change the namespace's default egress, so the sandbox
 * needs its own NetworkPolicy and the egress label: any allowOut or denyOut entry, or internet
 * access turned off.
 */
export function hasEgressRules(n: SandboxNetwork | undefined): boolean {
  return (n?.allowOut?.length ?? 0) > 0 || (n?.denyOut?.length ?? 0) > 0 || n?.allowInternetAccess === false;
}

/** isPrivateTraffic says whether the sandbox's ports other than envd's need its traffic token. */
export const isPrivateTraffic = (n: SandboxNetwork | undefined) => n?.allowPublicTraffic === false;

/** compact drops empty lists and unset fields, so an empty setting is `{}`. */
function compact(n: SandboxNetwork): SandboxNetwork {
  return {
    ...(n.allowOut?.length ? { allowOut: [...n.allowOut] } : {}),
    ...(n.denyOut?.length ? { denyOut: [...n.denyOut] } : {}),
    ...(n.allowInternetAccess !== undefined ? { allowInternetAccess: n.allowInternetAccess } : {}),
    ...(n.allowPublicTraffic !== undefined ? { allowPublicTraffic: n.allowPublicTraffic } : {}),
  };
}

/**
 * networkMarks are the labels and annotations a claim writes for these settings: the egress label
 * when the sandbox has rules of its own (its policy is written first), the private-traffic
 * annotation, and the settings themselves (none when there are none).
 */
export function networkMarks(n: SandboxNetwork | undefined): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const kept = compact(n ?? {});
  return {
    labels: hasEgressRules(kept) ? { [EGRESS_LABEL]: EGRESS_CUSTOM } : {},
    annotations: {
      ...(Object.keys(kept).length > 0 ? { [NETWORK_ANNOTATION]: JSON.stringify(kept) } : {}),
      ...(isPrivateTraffic(kept) ? { [TRAFFIC_ANNOTATION]: TRAFFIC_PRIVATE } : {}),
    },
  };
}

/** strings keeps an array's strings, or undefined when it is not an array. */
const strings = (x: unknown) =>
  Array.isArray(x) ? x.filter((s): s is string => typeof s === "string") : undefined;

/** networkOf reads a pod's network settings back from its annotation; `{}` when it has none or it is unreadable. */
export function networkOf(pod: { metadata?: { annotations?: Record<string, string> } }): SandboxNetwork {
  const raw = pod.metadata?.annotations?.[NETWORK_ANNOTATION];
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    const allowOut = strings(parsed.allowOut);
    const denyOut = strings(parsed.denyOut);
    return compact({
      ...(allowOut ? { allowOut } : {}),
      ...(denyOut ? { denyOut } : {}),
      ...(typeof parsed.allowInternetAccess === "boolean"
        ? { allowInternetAccess: parsed.allowInternetAccess }
        : {}),
      ...(typeof parsed.allowPublicTraffic === "boolean"
        ? { allowPublicTraffic: parsed.allowPublicTraffic }
        : {}),
    });
  } catch {
    return {};
  }
}

/**
 * updatedNetwork is the settings after a network update (E2B's PUT: it replaces the egress rules,
 * an omitted field is cleared); allowPublicTraffic is not an egress rule and stays as created.
 */
export function updatedNetwork(current: SandboxNetwork, update: SandboxNetwork): SandboxNetwork {
  return compact({
    ...(update.allowOut ? { allowOut: update.allowOut } : {}),
    ...(update.denyOut ? { denyOut: update.denyOut } : {}),
    ...(update.allowInternetAccess !== undefined ? { allowInternetAccess: update.allowInternetAccess } : {}),
    ...(current.allowPublicTraffic !== undefined ? { allowPublicTraffic: current.allowPublicTraffic } : {}),
  });
}
