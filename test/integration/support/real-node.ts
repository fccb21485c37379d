// What a test needs to run sandboxes on the real node (kubelet, containerd, runc): its pod
// template (selected and tolerated: kwok keeps everything else), and images built here.
import type { V1PodSpec } from "@kubernetes/client-node";
import { inject } from "vitest";
import { REAL_NODE_PLACEMENT } from "../../../infra/cluster/real-node/kubelet-config.ts";
import type { RealNodeState } from "../../../infra/cluster/real-node/real-node.ts";
import { imageRef } from "../../../infra/images/refs.ts";
import { topLayer } from "../../../infra/images/rootfs.ts";

/** realNode is the run's real node; a file on it cannot run without one, so this throws. */
export function realNode(): RealNodeState {
  const node = inject("cluster").realNode;
  if (!node) throw new Error("this cluster has no real node: the integration setup starts one (npm test)");
  return node;
}

/** REAL_IMAGES are the images built here (infra/images), as pods pull them. */
export const REAL_IMAGES = {
  idle: imageRef("idle"),
  a: imageRef("sandbox-a"),
  b: imageRef("sandbox-b"),
  web: imageRef("web"),
  /** chatty: sandbox-a that also prints a line a second and appends to a runtime log file (the logs tests). */
  chatty: imageRef("chatty"),
} as const;

/** onRealNode is the pod spec part that puts a pod on the real node (REAL_NODE_PLACEMENT). */
export const onRealNode: Pick<V1PodSpec, "nodeSelector" | "tolerations"> = REAL_NODE_PLACEMENT;

/**
 * envdEnv tells the envd inside a real container to listen on the port the test host sends envd
 * traffic to (the kwok pods' stand-in got a random port; production's is 49983 everywhere).
 */
export function envdEnv(): { name: string; value: string }[] {
  return [{ name: "ENVD_PORT", value: String(inject("cluster").envdPort) }];
}

/** RealPoolOptions shape a real-node pool: with or without an idle image, with a sidecar. */
export interface RealPoolOptions {
  idleImage?: boolean;
  sidecar?: boolean;
  image?: string;
  /** resources of the sandbox container (default: small requests, no limits). */
  resources?: Record<string, unknown>;
  terminationGracePeriodSeconds?: number;
}

/**
 * realPoolSpec is a SandboxPool spec whose pods run on the real node: the sandbox container runs
 * sandbox-a (envd inside), the idle image (when asked) holds the pod between tenants, a sidecar
 * (when asked) runs the idle image beside it.
 */
export function realPoolSpec(replicas: number, o: RealPoolOptions = {}): Record<string, unknown> {
  return {
    replicas,
    // Explicitly absent: poolObject (support/steps.ts) fills in a kwok idle image otherwise.
    idleImage: o.idleImage === false ? undefined : REAL_IMAGES.idle,
    template: {
      spec: {
        ...onRealNode,
        automountServiceAccountToken: false,
        ...(o.terminationGracePeriodSeconds === undefined
          ? {}
          : { terminationGracePeriodSeconds: o.terminationGracePeriodSeconds }),
        containers: [
          {
            name: "sandbox",
            image: o.image ?? REAL_IMAGES.a,
            env: envdEnv(),
            resources: o.resources ?? { requests: { cpu: "50m", memory: "64Mi" } },
          },
          ...(o.sidecar
            ? [
                {
                  name: "sidecar",
                  image: REAL_IMAGES.idle,
                  resources: { requests: { cpu: "10m", memory: "16Mi" } },
                },
              ]
            : []),
        ],
      },
    },
  };
}

/** WEB_PAGE is what busybox httpd serves at / in the web image (infra/images/rootfs.ts). */
export const WEB_PAGE = new TextDecoder().decode(
  topLayer("web").flatMap((e) => (e.type === "file" && e.path === "srv/www/index.html" ? [e.data] : []))[0],
);
