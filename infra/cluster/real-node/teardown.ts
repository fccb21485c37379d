import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { alive } from "../processes.ts";
import { removeCgroupTree } from "./cgroups.ts";
import { deleteBridge, linkExists, releasePodNetwork } from "./pod-network.ts";
import type { RealNodeState } from "./real-node.ts";

/** pidsUnder lists every process whose command line names marker (the node's directory). */
function pidsNaming(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids.filter((p) => p !== process.pid);
}

/** cgroupPids lists the processes in a cgroup tree of one hierarchy (the containers' processes). */
function cgroupPids(dir: string): number[] {
  if (!existsSync(dir)) return [];
  const pids: number[] = [];
  const walk = (d: string) => {
    try {
      for (const line of readFileSync(join(d, "cgroup.procs"), "utf8").split("\n"))
        if (line) pids.push(Number(line));
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(join(d, e.name));
    } catch {
      // removed meanwhile
    }
  };
  walk(dir);
  return pids;
}

/** killAll sends SIGKILL to each pid and waits (bounded) until none is alive. */
async function killAll(pids: number[], waitMs = 10_000): Promise<void> {
  for (const p of pids) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + waitMs;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** mountsUnder lists mount points under dir, deepest first (from /proc/self/mountinfo). */
export function mountsUnder(dir: string): string[] {
  const points = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .map((p) => p.replace(/\\040/g, " "))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * teardownRealNode removes everything the real node made, whatever state it was left in (a
 * crashed kubelet, a killed containerd): the kubelet and every container process (found by the
 * node's cgroups, so none escapes), containerd and its shims (found by the node's directory in
 * their command lines), every mount under the node's directory (rootfs overlays, the network
 * namespaces' bind mounts, pod volumes), the bridge and its lease, the iptables rules portmap
 * made for this network, and the cgroup tree. It returns what it could not remove (empty when
 * clean), for `down` to report.
 */
export async function teardownRealNode(node: RealNodeState, log: (line: string) => void): Promise<string[]> {
  const left: string[] = [];
  await killAll(pidsNaming(join(node.dir, "kubelet.yaml")));
  await killAll(
    cgroupPids(join("/sys/fs/cgroup/pids", node.cgroupRoot)).concat(
      cgroupPids(join("/sys/fs/cgroup", node.cgroupRoot)),
    ),
  );
  await killAll(pidsNaming(node.dir));
  for (const m of mountsUnder(node.dir)) {
    try {
      execFileSync("umount", ["-l", m], { stdio: "ignore", timeout: 10_000 });
    } catch {
      left.push(`mount ${m}`);
    }
  }
  sweepIptables(`agentbox-${node.network.index}`, log);
  try {
    deleteBridge(node.network);
  } catch (e) {
    left.push(`bridge ${node.network.bridge}: ${(e as Error).message}`);
  }
  if (!linkExists(node.network.bridge)) releasePodNetwork(node.leaseDir, node.network);
  for (const dir of removeCgroupTree(node.cgroupRoot)) left.push(`cgroup ${dir}`);
  try {
    rmSync(node.dir, { recursive: true, force: true, maxRetries: 3 });
  } catch (e) {
    left.push(`directory ${node.dir}: ${(e as Error).message}`);
  }
  if (left.length) log(`real node: could not remove ${left.join("; ")}`);
  return left;
}

/**
 * sweepIptables deletes the nat rules and chains the portmap plugin made for this network: the
 * jumps in CNI-HOSTPORT-DNAT carry the network's name in a comment, and each leads to a CNI-DN-*
 * chain of that pod's own. A pod killed without a CNI DEL leaves them; rules are deleted by
 * number, highest first, because their comments do not survive a round trip through a shell-less
 * argument list.
 */
function sweepIptables(network: string, log: (line: string) => void): void {
  const iptables = (args: string[]) =>
    execFileSync("iptables", ["-t", "nat", ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 10_000,
    });
  let rules: string[];
  try {
    rules = iptables(["-S", "CNI-HOSTPORT-DNAT"])
      .split("\n")
      .filter((l) => l.startsWith("-A "));
  } catch {
    return; // no portmap chain: nothing was ever mapped
  }
  const ours = rules
    .map((rule, i) => ({ rule, number: i + 1 }))
    .filter((r) => r.rule.includes(`\\"${network}\\"`));
  for (const { rule, number } of ours.reverse()) {
    const chain = / -j (CNI-DN-[A-Za-z0-9]+)/.exec(rule)?.[1];
    try {
      iptables(["-D", "CNI-HOSTPORT-DNAT", String(number)]);
      if (chain) {
        iptables(["-F", chain]);
        iptables(["-X", chain]);
      }
    } catch (e) {
      log(`real node: iptables rule of ${network} left: ${(e as Error).message}`);
    }
  }
}
