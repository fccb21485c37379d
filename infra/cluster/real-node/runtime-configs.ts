import type { PodNetwork } from "./pod-network.ts";

/** ContainerdPaths are one real node's containerd directories and sockets (all under the cluster's directory). */
export interface ContainerdPaths {
  root: string;
  state: string;
  socket: string;
  /** certsDir holds `<registry>/hosts.toml`: where images of a registry name are pulled from. */
  certsDir: string;
  cniConfDir: string;
  cniBinDir: string;
  runc: string;
  sandboxImage: string;
  /** streamPort is the CRI stream server's loopback port. */
  streamPort: number;
}

const q = (s: string) => JSON.stringify(s);

/**
 * containerdConfig is a containerd 2.x configuration (version 4) that keeps everything of this
 * node under its own directories: nothing in /etc, /run or /var/lib/containerd, no NRI socket,
 * network namespaces under its state directory (so `cluster down` finds exactly its own). Two
 * settings this machine needs: `restrict_oom_score_adj` (root here lacks CAP_SYS_RESOURCE; without
 * it runc fails with "can't get final child's PID from pipe") and runc from Debian.
 */
export function containerdConfig(p: ContainerdPaths): string {
  return `version = 4
root = ${q(p.root)}
state = ${q(p.state)}
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs", "io.containerd.mount-handler.v1.erofs"]

[plugins."io.containerd.server.v1.grpc"]
  address = ${q(p.socket)}
[plugins."io.containerd.server.v1.ttrpc"]
  address = ${q(`${p.socket}.ttrpc`)}
[plugins."io.containerd.server.v1.debug"]
  address = ""
[plugins."io.containerd.server.v1.metrics"]
  address = ""

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${q(p.sandboxImage)}
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = ${q(p.certsDir)}

[plugins."io.containerd.transfer.v1.local"]
  config_path = ${q(p.certsDir)}

[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = false
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ${q(p.runc)}
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [${q(p.cniBinDir)}]
    conf_dir = ${q(p.cniConfDir)}
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = ${q(String(p.streamPort))}
`;
}

/**
 * registryHostsToml points `registry.agentbox.test` (IMAGE_REGISTRY) at the local registry over plain HTTP on
 * loopback, so image references stay the same whatever port a cluster's registry got.
 */
export function registryHostsToml(registryPort: number): string {
  const url = `http://127.0.0.1:${registryPort}`;
  return `server = ${q(url)}\n\n[host.${q(url)}]\n  capabilities = ["pull", "resolve", "push"]\n  skip_verify = true\n`;
}

/**
 * cniConflist is the pod network: the bridge plugin on the node's bridge with host-local
 * addresses from its /24 (state under the cluster's directory) and portmap for hostPorts. No
 * masquerade: these machines have no outside network to reach, and no rule is left behind.
 */
export function cniConflist(net: PodNetwork, ipamDir: string): string {
  return `${JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: `agentbox-${net.index}`,
      plugins: [
        {
          type: "bridge",
          bridge: net.bridge,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: net.subnet, gateway: net.gateway }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir: ipamDir,
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/**
 * registryConfig is Debian docker-registry's (distribution 2.8) configuration: filesystem storage,
 * HTTP on loopback, deletes allowed (the snapshot agent deletes what a sandbox no longer needs)
 * unless `deletes` is false (a registry as some operators run it).
 */
export function registryConfig(port: number, storageDir: string, o: { deletes?: boolean } = {}): string {
  return `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${q(storageDir)}
  delete:
    enabled: ${o.deletes ?? true}
http:
  addr: 127.0.0.1:${port}
`;
}
