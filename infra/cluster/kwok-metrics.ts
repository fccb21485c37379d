import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { fileURLToPath } from "node:url";
import { RESOURCE_METRICS_ANNOTATION } from "../../lib/usage/resource-metrics.ts";
import { freePorts } from "./ports.ts";

const KWOK_USAGE = fileURLToPath(new URL("../kwok/resource-usage.yaml", import.meta.url));

/**
 * ownAddress is an IPv4 address this machine holds on a real interface: the one of the interface
 * the default route leaves by (Linux's /proc/net/route), else the first non-loopback one, never a
 * real node's pod bridge (`abx<n>`, which goes away with its cluster). Undefined when there is
 * none. The apiserver's node proxy refuses loopback and link-local addresses, so this is the
 * address through which it can reach a server of ours on this machine, here and on CI alike;
 * traffic to it never leaves the machine.
 */
export function ownAddress(): string | undefined {
  const interfaces = networkInterfaces();
  const ipv4 = (name: string) =>
    (interfaces[name] ?? []).find((a) => a.family === "IPv4" && !a.internal)?.address;
  const routes = existsSync("/proc/net/route") ? readFileSync("/proc/net/route", "utf8") : "";
  const viaDefault = routes
    .split("\n")
    .map((l) => l.split(/\s+/))
    .find((f) => f[1] === "00000000" && f[7] === "00000000")?.[0];
  const preferred = viaDefault && ipv4(viaDefault);
  if (preferred) return preferred;
  for (const name of Object.keys(interfaces)) {
    const address = /^abx\d+$/.test(name) ? undefined : ipv4(name);
    if (address) return address;
  }
  return undefined;
}

/** KwokMetrics is where kwok's HTTP server, and so its simulated resource metrics, is served. */
interface KwokMetrics {
  address: string;
  port: number;
}

/** NO_METRICS_NODE_IP is the kwok nodes' InternalIP on a machine without an address of its own (nothing reaches it). */
const NO_METRICS_NODE_IP = "10.240.0.1";

/** KwokMetricsWiring is what `up` gives kwok and its nodes for their simulated resource metrics. */
export interface KwokMetricsWiring {
  /** args are kwok's flags: the nodes' IP and, with metrics, where its HTTP server listens. */
  args: string[];
  /** annotations are a kwok node's annotations for them: where its resource metrics are ({} without). */
  annotations: (node: string) => Record<string, string>;
}

/**
 * kwokMetricsWiring sets up kwok's simulated resource metrics for a cluster whose kwok config is
 * `kwokConfig`: kwok serves them on a free port at ownAddress (the node proxy reaches the nodes
 * there: it is their InternalIP), its config gains the usage simulation, and each node's
 * annotation says where they are. A machine without such an address gets none, said in `log`.
 */
export async function kwokMetricsWiring(
  kwokConfig: string,
  log: (line: string) => void,
): Promise<KwokMetricsWiring> {
  const address = ownAddress();
  if (!address) {
    log("no non-loopback IPv4 address here: kwok nodes get no resource metrics");
    return { args: [`--node-ip=${NO_METRICS_NODE_IP}`], annotations: () => ({}) };
  }
  const metrics: KwokMetrics = { address, port: (await freePorts(1))[0]! };
  appendKwokUsage(kwokConfig);
  return {
    args: [`--node-ip=${address}`, ...kwokMetricsArgs(metrics)],
    annotations: (node) => resourceMetricsAnnotation(node, metrics),
  };
}

/** kwokMetricsArgs are kwok's flags for its HTTP server (plain HTTP; no debugging handlers). */
function kwokMetricsArgs(m: KwokMetrics): string[] {
  return [`--server-address=${m.address}:${m.port}`];
}

/**
 * resourceMetricsAnnotation is RESOURCE_METRICS_ANNOTATION for a kwok node: kwok's resource
 * metrics of that node (infra/kwok/resource-usage.yaml) through the node proxy, plain HTTP on
 * kwok's port at the node's address (the node's InternalIP is kwok's --node-ip, ownAddress).
 */
function resourceMetricsAnnotation(node: string, m: KwokMetrics): Record<string, string> {
  return {
    [RESOURCE_METRICS_ANNOTATION]: `http:${node}:${m.port}/metrics/nodes/${node}/metrics/resource`,
  };
}

/** appendKwokUsage adds the resource usage simulation (infra/kwok/resource-usage.yaml) to kwok's config. */
function appendKwokUsage(kwokConfig: string): void {
  appendFileSync(kwokConfig, `\n---\n${readFileSync(KWOK_USAGE, "utf8")}`);
}
