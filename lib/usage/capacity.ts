// What a sandbox may use: its CPUs, memory and disk, from its pod's limits, else its node's
// allocatable resources (a container without a limit may use what the node gives pods).
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { parseQuantity, quantityMilliValue, quantityValue } from "../lifecycle/quantity.ts";
import { defined } from "./defined.ts";

/** Capacity is what a sandbox or a node offers: CPU cores, memory and disk bytes (undefined: unknown). */
export interface Capacity {
  cpuCores?: number;
  memoryBytes?: number;
  diskBytes?: number;
}

type Resources = Record<string, unknown> | undefined;

const RESOURCE = { cpu: "cpu", memory: "memory", disk: "ephemeral-storage" } as const;

/** amount reads one quantity (a string, or a number as a Worker's JSON may carry it) in base units. */
function amount(resources: Resources, name: string): number | undefined {
  const raw = resources?.[name];
  const q = parseQuantity(typeof raw === "number" ? String(raw) : typeof raw === "string" ? raw : "");
  if (!q || q.numerator < 0n) return undefined;
  return name === RESOURCE.cpu ? quantityMilliValue(q) / 1000 : quantityValue(q);
}

/** nodeCapacity is a node's allocatable resources (what its pods may use together). */
export function nodeCapacity(node: V1Node | undefined): Capacity {
  const allocatable = node?.status?.allocatable as Resources;
  return defined({
    cpuCores: amount(allocatable, RESOURCE.cpu),
    memoryBytes: amount(allocatable, RESOURCE.memory),
    diskBytes: amount(allocatable, RESOURCE.disk),
  });
}

/**
 * podTotal sums one resource over the pod's containers: their limits when every container has
 * one (the most it can use), capped at the node's; else the node's (a container without a
 * limit may take all of it); with no node to tell, the limits or else the requests summed.
 */
function podTotal(pod: V1Pod, name: string, node: number | undefined): number | undefined {
  const containers = pod.spec?.containers ?? [];
  if (containers.length === 0) return node;
  const limits = containers.map((c) => amount(c.resources?.limits as Resources, name));
  const limited = limits.every((l) => l !== undefined);
  const sum = (xs: (number | undefined)[]) => xs.reduce<number>((a, b) => a + (b ?? 0), 0);
  if (limited) return node === undefined ? sum(limits) : Math.min(sum(limits), node);
  if (node !== undefined) return node;
  const requests = containers.map((c) => amount(c.resources?.requests as Resources, name));
  const either = limits.map((l, i) => l ?? requests[i]);
  return either.some((x) => x !== undefined) ? sum(either) : undefined;
}

/**
 * sandboxCapacity is what the sandbox's pod may use on its node: CPU and memory by podTotal; disk
 * only when every container has an ephemeral-storage limit (else the filesystem's capacity the
 * kubelet reports with the figures says more than the node's allocatable share: the caller's).
 */
export function sandboxCapacity(pod: V1Pod, node: Capacity): Capacity {
  const containers = pod.spec?.containers ?? [];
  const disks = containers.map((c) => amount(c.resources?.limits as Resources, RESOURCE.disk));
  return defined({
    cpuCores: podTotal(pod, RESOURCE.cpu, node.cpuCores),
    memoryBytes: podTotal(pod, RESOURCE.memory, node.memoryBytes),
    diskBytes:
      disks.length > 0 && disks.every((d) => d !== undefined)
        ? disks.reduce<number>((a, b) => a + (b ?? 0), 0)
        : undefined,
  });
}
