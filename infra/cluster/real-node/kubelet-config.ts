import type { PodNetwork } from "./pod-network.ts";

/** REAL_NODE_LABEL marks the real node; pools that want real containers select it. */
export const REAL_NODE_LABEL = "agentbox.navix.sh/real-node";
/**
 * REAL_NODE_TAINT keeps every pod that does not tolerate it off the real node: kwok stays the
 * simulator for scale, and only pods that ask for real containers pay for them.
 */
export const REAL_NODE_TAINT = {
  key: "agentbox.navix.sh/real-node",
  value: "true",
  effect: "NoSchedule",
} as const;

/**
 * REAL_NODE_PLACEMENT is the pod spec part that puts a pod on the real node: it selects the
 * node's label and tolerates its taint.
 */
export const REAL_NODE_PLACEMENT: {
  nodeSelector: Record<string, string>;
  tolerations: { key: string; operator: string; value: string; effect: string }[];
} = {
  nodeSelector: { [REAL_NODE_LABEL]: "true" },
  tolerations: [{ ...REAL_NODE_TAINT, operator: "Equal" }],
};

/** KubeletPaths are the files and directories one real node's kubelet uses. */
export interface KubeletPaths {
  rootDir: string;
  podLogsDir: string;
  containerdSocket: string;
  caCert: string;
}

/**
 * kubeletConfiguration is the KubeletConfiguration of the local real node. The choices that are
 * not Kubernetes defaults, and why:
 * - `failCgroupV1: false` with the cgroupfs driver: these machines have a cgroup v1 (hybrid)
 *   hierarchy and no systemd; kubelet 1.35+ refuses v1 otherwise. A user's node runs cgroup v2.
 * - `cgroupRoot` of its own, so two local clusters' kubelets never share `kubepods`.
 * - Address on the pod bridge's gateway and ports picked per cluster, for the same reason.
 * - Authentication by client certificate from the cluster's CA only (the apiserver's), and
 *   AlwaysAllow for it: a local node, reached by nothing else.
 * - Eviction thresholds near zero: a developer's disk at 85 % must not evict the sandboxes.
 * - `podLogsDir` under the cluster's directory, so `cluster down` removes the logs too.
 * - `crashLoopBackOff.maxContainerRestartPeriod: 1s`: the kubelet backs off every start of a
 *   container after its first, keyed by pod, container and image, doubling up to 5 minutes, and
 *   an in-place swap is such a start: a pod swapped idle → sandbox → idle → ... waited 16, 25, 44,
 *   85 s for its resets (measured here). Pools swap by design; a user's nodes need the same
 *   setting (README: "What a user's node needs").
 */
export function kubeletConfiguration(
  net: PodNetwork,
  ports: { kubelet: number; healthz: number },
  cgroupRoot: string,
  paths: KubeletPaths,
): Record<string, unknown> {
  return {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: net.gateway,
    port: ports.kubelet,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: ports.healthz,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: false },
      x509: { clientCAFile: paths.caCert },
    },
    authorization: { mode: "AlwaysAllow" },
    cgroupDriver: "cgroupfs",
    cgroupRoot,
    cgroupsPerQOS: true,
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    imageServiceEndpoint: `unix://${paths.containerdSocket}`,
    podLogsDir: paths.podLogsDir,
    registerNode: true,
    registerWithTaints: [REAL_NODE_TAINT],
    maxPods: 60,
    serializeImagePulls: false,
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: {
      "memory.available": "100Mi",
      "nodefs.available": "1%",
      "nodefs.inodesFree": "1%",
      "imagefs.available": "1%",
    },
    nodeStatusUpdateFrequency: "10s",
    syncFrequency: "10s",
    shutdownGracePeriod: "0s",
    crashLoopBackOff: { maxContainerRestartPeriod: "1s" },
    resolvConf: "/etc/resolv.conf",
    rotateCertificates: false,
    serverTLSBootstrap: false,
    containerLogMaxSize: "10Mi",
    containerLogMaxFiles: 2,
  };
}
