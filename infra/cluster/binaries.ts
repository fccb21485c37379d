import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * ensureBinaries builds (once, cached outside the repo) and returns the directory holding
 * kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok. Build progress goes
 * to stderr. AGENTBOX_BIN_DIR points at prebuilt binaries instead.
 */
export function ensureBinaries(): string {
  if (process.env.AGENTBOX_BIN_DIR) return process.env.AGENTBOX_BIN_DIR;
  const script = fileURLToPath(new URL("../build/build-binaries.sh", import.meta.url));
  return execFileSync("bash", [script], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" }).trim();
}

/**
 * ensureNodeBinaries builds (once, cached like the control plane) and returns the directory
 * holding the real node's kubelet, containerd, its runc shim and ctr. AGENTBOX_NODE_BIN_DIR
 * points at prebuilt ones instead.
 */
export function ensureNodeBinaries(): string {
  if (process.env.AGENTBOX_NODE_BIN_DIR) return process.env.AGENTBOX_NODE_BIN_DIR;
  const script = fileURLToPath(new URL("../build/build-node-binaries.sh", import.meta.url));
  return execFileSync("bash", [script], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" }).trim();
}
