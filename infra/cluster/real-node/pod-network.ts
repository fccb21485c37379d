import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * PodNetwork is the real node's pod network: a /24 from 198.18.0.0/15 (the range reserved for
 * benchmarks, never a private range these machines may use), a Linux bridge in the host's
 * network namespace holding the gateway address (so the host, the router and the tests reach
 * pods directly, and the kubelet has a non-loopback address to serve on).
 */
export interface PodNetwork {
  /** index is the third octet: 198.18.<index>.0/24. */
  index: number;
  subnet: string;
  gateway: string;
  bridge: string;
}

/** podNetworkOf is the network of one index (0..255); a pure function, so cleanup can rebuild it. */
export function podNetworkOf(index: number): PodNetwork {
  return {
    index,
    subnet: `198.18.${index}.0/24`,
    gateway: `198.18.${index}.1`,
    bridge: `abx${index}`,
  };
}

function ip(args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10_000 });
}

/** linkExists says whether a network interface of that name exists. */
export function linkExists(name: string): boolean {
  try {
    ip(["link", "show", "dev", name]);
    return true;
  } catch {
    return false;
  }
}

/**
 * claimPodNetwork takes the lowest free /24 for the cluster whose directory is `owner`: a lease file per index under
 * leaseDir, created exclusively (two clusters starting at once never get the same range), and a
 * range whose bridge still exists or that a route already covers is skipped. A lease whose
 * cluster directory is gone is stale and reclaimed.
 */
export function claimPodNetwork(leaseDir: string, owner: string): PodNetwork {
  mkdirSync(leaseDir, { recursive: true });
  const routes = ip(["-4", "route", "show"]);
  for (let index = 0; index < 256; index++) {
    const net = podNetworkOf(index);
    const lease = join(leaseDir, String(index));
    try {
      const holder = readFileSync(lease, "utf8").trim();
      if (holder && existsSync(holder)) continue;
      rmSync(lease, { force: true });
    } catch {
      // no lease: free unless the host uses the range
    }
    if (routes.includes(`198.18.${index}.`) || linkExists(net.bridge)) continue;
    try {
      closeSync(openSync(lease, "wx"));
    } catch {
      continue;
    }
    writeFileSync(lease, owner);
    return net;
  }
  throw new Error(`no free /24 left in 198.18.0.0/16 (leases in ${leaseDir})`);
}

/** releasePodNetwork drops the lease (after the bridge is gone). */
export function releasePodNetwork(leaseDir: string, net: PodNetwork): void {
  rmSync(join(leaseDir, String(net.index)), { force: true });
}

/** createBridge makes the bridge with the gateway address, up, before the kubelet binds to it. */
export function createBridge(net: PodNetwork): void {
  if (!linkExists(net.bridge)) ip(["link", "add", net.bridge, "type", "bridge"]);
  const addrs = ip(["-4", "addr", "show", "dev", net.bridge]);
  if (!addrs.includes(`${net.gateway}/`)) ip(["addr", "add", `${net.gateway}/24`, "dev", net.bridge]);
  ip(["link", "set", net.bridge, "up"]);
}

/** deleteBridge removes the bridge (its veths went with the pods' network namespaces). */
export function deleteBridge(net: PodNetwork): void {
  if (linkExists(net.bridge)) ip(["link", "delete", net.bridge]);
}
