import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { IMAGE_REGISTRY } from "../../images/refs.ts";
import { writeKubeconfig } from "../configs.ts";
import { freePorts } from "../ports.ts";
import { createCgroupRoot } from "./cgroups.ts";
import { kubeletConfiguration, REAL_NODE_LABEL } from "./kubelet-config.ts";
import { claimPodNetwork, createBridge, type PodNetwork } from "./pod-network.ts";
import { cniConflist, containerdConfig, registryConfig, registryHostsToml } from "./runtime-configs.ts";

/** CNI_BIN_DIR is where Debian's containernetworking-plugins puts bridge, host-local, loopback and portmap. */
export const CNI_BIN_DIR = "/usr/lib/cni";
/** RUNC is Debian's runc. */
export const RUNC = "/usr/sbin/runc";
/** REGISTRY_BIN is Debian's docker-registry (distribution 2.8). */
export const REGISTRY_BIN = "/usr/bin/docker-registry";

/** RealNodeState is what `cluster up` records about the real node, so `down` removes exactly it. */
export interface RealNodeState {
  name: string;
  dir: string;
  network: PodNetwork;
  leaseDir: string;
  /** cgroupRoot is the kubelet's cgroup root, without the leading slash. */
  cgroupRoot: string;
  containerdSocket: string;
  containerdState: string;
  registryPort: number;
  kubeletPort: number;
}

/** RealNodePlan is a real node's files and ports, ready for its processes to start. */
export interface RealNodePlan {
  state: RealNodeState;
  registry: { bin: string; args: string[] };
  containerd: { bin: string; args: string[] };
  kubelet: { bin: string; args: string[] };
}

/** REAL_NODE_NAME is the one real node's name. */
export const REAL_NODE_NAME = "real-node-0";

/**
 * planRealNode writes one real node's configuration under `<clusterDir>/node` and claims its
 * pod network (a bridge made now, so the kubelet can bind its gateway address): containerd with
 * its own root, state and socket, the CNI bridge conflist, a local registry that containerd
 * pulls `registry.agentbox.test/...` from, and the kubelet. Nothing starts here; `up` runs the
 * processes in order (registry, containerd, images pushed, kubelet).
 */
export async function planRealNode(opts: {
  clusterDir: string;
  clusterName: string;
  leaseDir: string;
  binDir: string;
  server: string;
  caCert: string;
  nodeToken: string;
  sandboxImage: string;
}): Promise<RealNodePlan> {
  const dir = join(opts.clusterDir, "node");
  const d = (...p: string[]) => join(dir, ...p);
  for (const sub of [
    "containerd/root",
    "containerd/state",
    "certs.d",
    "cni/net.d",
    "cni/ipam",
    "kubelet",
    "pod-logs",
    "registry",
  ])
    mkdirSync(d(sub), { recursive: true });
  const network = claimPodNetwork(opts.leaseDir, opts.clusterDir);
  createBridge(network);
  const cgroupRoot = `agentbox-${opts.clusterName}`;
  createCgroupRoot(cgroupRoot);
  // containerd's CRI stream server (exec, attach, port-forward) gets a port picked here too: left
  // to the kernel ("0") it could take a port another cluster picked and has not bound yet.
  const [registryPort, kubeletPort, healthzPort, streamPort] = (await freePorts(4)) as [
    number,
    number,
    number,
    number,
  ];
  const socket = d("containerd", "containerd.sock");

  writeFileSync(d("registry.yml"), registryConfig(registryPort, d("registry")));
  mkdirSync(d("certs.d", IMAGE_REGISTRY), { recursive: true });
  writeFileSync(d("certs.d", IMAGE_REGISTRY, "hosts.toml"), registryHostsToml(registryPort));
  writeFileSync(d("cni/net.d/10-agentbox.conflist"), cniConflist(network, d("cni/ipam")));
  writeFileSync(
    d("containerd.toml"),
    containerdConfig({
      root: d("containerd/root"),
      state: d("containerd/state"),
      socket,
      certsDir: d("certs.d"),
      cniConfDir: d("cni/net.d"),
      cniBinDir: CNI_BIN_DIR,
      runc: RUNC,
      sandboxImage: opts.sandboxImage,
      streamPort,
    }),
  );
  writeFileSync(
    d("kubelet.yaml"),
    stringify(
      kubeletConfiguration(network, { kubelet: kubeletPort, healthz: healthzPort }, `/${cgroupRoot}`, {
        rootDir: d("kubelet"),
        podLogsDir: d("pod-logs"),
        containerdSocket: socket,
        caCert: opts.caCert,
      }),
    ),
  );
  writeKubeconfig(
    d("kubelet.kubeconfig"),
    opts.server,
    opts.caCert,
    opts.nodeToken,
    `system:node:${REAL_NODE_NAME}`,
  );

  return {
    state: {
      name: REAL_NODE_NAME,
      dir,
      network,
      leaseDir: opts.leaseDir,
      cgroupRoot,
      containerdSocket: socket,
      containerdState: d("containerd/state"),
      registryPort,
      kubeletPort,
    },
    registry: { bin: REGISTRY_BIN, args: ["serve", d("registry.yml")] },
    containerd: { bin: join(opts.binDir, "containerd"), args: ["--config", d("containerd.toml")] },
    kubelet: {
      bin: join(opts.binDir, "kubelet"),
      args: [
        `--config=${d("kubelet.yaml")}`,
        `--kubeconfig=${d("kubelet.kubeconfig")}`,
        `--root-dir=${d("kubelet")}`,
        `--cert-dir=${d("kubelet", "pki")}`,
        `--hostname-override=${REAL_NODE_NAME}`,
        `--node-ip=${network.gateway}`,
        `--node-labels=${REAL_NODE_LABEL}=true,type=real`,
        "--v=1",
      ],
    },
  };
}
