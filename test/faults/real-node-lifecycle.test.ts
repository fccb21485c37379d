// The real node's `cluster up` and `down`: twice in a row, with pods running (one with a
// hostPort, so portmap writes iptables rules), and nothing the node made is left afterwards:
// no process, mount, network namespace, bridge, cgroup, iptables rule or lease.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { down } from "../../infra/cluster/down.ts";
import { cgroupTreeExists } from "../../infra/cluster/real-node/cgroups.ts";
import { nodeImages } from "../../infra/cluster/real-node/node-images.ts";
import { linkExists } from "../../infra/cluster/real-node/pod-network.ts";
import { mountsUnder } from "../../infra/cluster/real-node/teardown.ts";
import { clusterDir } from "../../infra/cluster/state.ts";
import { up } from "../../infra/cluster/up.ts";
import { until } from "../integration/support/kube.ts";
import { onRealNode, REAL_IMAGES } from "../integration/support/real-node.ts";

const log = (line: string) => console.error(`[real-node] ${line}`);

/** processesNaming lists live processes whose command line names the marker. */
function processesNaming(marker: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmd.includes(marker) && Number(pid) !== process.pid)
        found.push(`${pid} ${cmd.replaceAll("\0", " ")}`);
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

/** nsMountsNaming lists network-namespace mounts anywhere that live under dir. */
function nsfsMountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .filter((l) => l.includes(" nsfs ") && l.includes(dir));
}

describe("the real node's up and down", () => {
  it("starts, runs pods (one with a hostPort), and leaves nothing behind, twice", async () => {
    const name = `rn-life-${process.pid}`;
    const dir = clusterDir(name);
    for (const round of [1, 2]) {
      const state = await up({
        name,
        nodes: 1,
        pullDelayMs: 0,
        backoffDelayMs: 0,
        realNode: nodeImages(log),
        log,
      });
      const node = state.realNode;
      expect(node, "up started a real node").toBeDefined();
      if (!node) return;
      const kc = new KubeConfig();
      kc.loadFromFile(state.kubeconfig);
      const core = kc.makeApiClient(CoreV1Api);
      await until("the default service account", 60_000, async () => {
        await core.readNamespacedServiceAccount({ name: "default", namespace: "default" });
        return true;
      });
      for (const [pod, hostPort] of [
        ["plain", undefined],
        ["ported", 30_000 + (process.pid % 5_000) + round],
      ] as const) {
        await core.createNamespacedPod({
          namespace: "default",
          body: {
            metadata: { name: pod },
            spec: {
              ...onRealNode,
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: "c",
                  image: REAL_IMAGES.idle,
                  ...(hostPort ? { ports: [{ containerPort: 8080, hostPort }] } : {}),
                },
              ],
            },
          },
        });
      }
      await until("both pods running on the real node", 120_000, async () => {
        const pods = (await core.listNamespacedPod({ namespace: "default" })).items;
        return (
          pods.length === 2 &&
          pods.every((p) => p.status?.phase === "Running" && p.spec?.nodeName === node.name)
        );
      });
      // Something to clean: container processes in the node's cgroups, the pods' mounts and namespaces.
      expect(cgroupTreeExists(node.cgroupRoot)).toBe(true);
      expect(mountsUnder(node.dir).length).toBeGreaterThan(0);
      expect(linkExists(node.network.bridge)).toBe(true);
      // portmap's rules name the network in a comment: `dnat name: \"agentbox-<index>\"`.
      const ruleName = `\\"agentbox-${node.network.index}\\"`;
      expect(execFileSync("iptables-save", ["-t", "nat"], { encoding: "utf8" })).toContain(ruleName);

      await down(name, log);

      expect(processesNaming(dir), `round ${round}: processes left`).toEqual([]);
      expect(mountsUnder(dir), `round ${round}: mounts left`).toEqual([]);
      expect(nsfsMountsUnder(dir), `round ${round}: network namespaces left`).toEqual([]);
      // The /24 is free again: another cluster starting now (a bench, the integration run) may
      // lease it and make a bridge of the same name at once. Ours is gone if the lease is not ours.
      const lease = join(node.leaseDir, String(node.network.index));
      const reused = existsSync(lease) && readFileSync(lease, "utf8").trim() !== dir;
      if (!reused) {
        expect(linkExists(node.network.bridge), `round ${round}: bridge left`).toBe(false);
        expect(existsSync(lease), `round ${round}: lease left`).toBe(false);
        expect(
          execFileSync("iptables-save", ["-t", "nat"], { encoding: "utf8" }),
          `round ${round}: rules left`,
        ).not.toContain(ruleName);
      }
      expect(cgroupTreeExists(node.cgroupRoot), `round ${round}: cgroups left`).toBe(false);
      expect(existsSync(dir), `round ${round}: cluster directory left`).toBe(false);
    }
  });
});
