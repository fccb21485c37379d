/**
 * pod-instances.ts tells the stand-in which container instance serves a pod IP now: the pod's
 * uid and the containerID of its envd's container (the first of the sandbox containers the pod
 * names, else its first container), read from the apiserver when an /init arrives. A claim runs
 * in a container that never served, so a changed instance means the envd an earlier /init
 * reached has died with its container (pods.ts). Pods that are finished or deleted no longer
 * hold their IP and are ignored. The lookup also gives that container's name and the image its
 * pod spec names (a snapshot image restores a snapshot into the fresh directory, pods.ts).
 */
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_CONTAINERS_ANNOTATION } from "../../../lib/crd/keys.ts";
import type { KubeTransport } from "../../../lib/kube/transport.ts";
import type { Instance, InstanceLookup } from "./pods.ts";

/** envdContainerOf names a pod's envd container: its first sandbox container, else its first. */
function envdContainerOf(pod: V1Pod): string | undefined {
  const named = pod.metadata?.annotations?.[SANDBOX_CONTAINERS_ANNOTATION]?.split(",")[0]?.trim();
  return named || pod.spec?.containers?.[0]?.name;
}

/** instanceOfPod is a pod's envd instance: `<uid>/<containerID>` ("" when not running yet). */
export function instanceOfPod(pod: V1Pod): string {
  const name = envdContainerOf(pod);
  const status = pod.status?.containerStatuses?.find((c) => c.name === name);
  return `${pod.metadata?.uid ?? ""}/${status?.containerID ?? ""}`;
}

/** podInstance is a pod's envd instance with its container's name and spec image. */
export function podInstance(pod: V1Pod): Instance {
  const container = envdContainerOf(pod);
  const image = pod.spec?.containers?.find((c) => c.name === container)?.image;
  return {
    id: instanceOfPod(pod),
    ...(container ? { container } : {}),
    ...(image ? { image } : {}),
  };
}

/**
 * podInstances looks pod IPs up with a consistent list (a field selector on status.podIP, every
 * namespace); the transport bounds each call. Unknown (no live pod, or the call failed): undefined.
 */
export function podInstances(transport: KubeTransport): InstanceLookup {
  return async (ip) => {
    const res = await transport({
      method: "GET",
      path: "/api/v1/pods",
      query: { fieldSelector: `status.podIP=${ip}` },
      list: true,
    });
    if (res.status !== 200) return undefined;
    const items = ((JSON.parse(res.body) as { items?: V1Pod[] }).items ?? []).filter(
      (p) =>
        !p.metadata?.deletionTimestamp && p.status?.phase !== "Succeeded" && p.status?.phase !== "Failed",
    );
    return items.length === 1 && items[0] ? podInstance(items[0]) : undefined;
  };
}
