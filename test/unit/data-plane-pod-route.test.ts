import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { podRoute, upstreamPort } from "../../lib/data-plane/pod-route.ts";

/** OWNER is the controlling reference renderPod gives a pool's pods. */
const OWNER = {
  apiVersion: "agents.navix.sh/v1alpha1",
  kind: "SandboxPool",
  name: "p",
  uid: "pool-uid",
  controller: true,
};

/** pod is a claimed sandbox pod as the router's watch reports it. */
function pod(
  over: {
    phase?: string;
    id?: string;
    annotationId?: string;
    ip?: string;
    hooks?: boolean;
    owners?: V1OwnerReference[];
    poolLabel?: string;
  } = {},
): V1Pod {
  const id = over.id ?? "sbx-a";
  return {
    metadata: {
      name: "p-0",
      namespace: "ns",
      uid: "uid-1",
      labels: {
        "agentbox.navix.sh/sandbox-pool": over.poolLabel ?? "p",
        "agentbox.navix.sh/sandbox-phase": over.phase ?? "running",
        ...(id ? { "agentbox.navix.sh/sandbox-id": id } : {}),
      },
      annotations: {
        ...(over.annotationId ? { "agentbox.navix.sh/sandbox-id": over.annotationId } : {}),
        ...(over.hooks ? { "agentbox.navix.sh/post-start-hooks": "v1.x" } : {}),
      },
      ownerReferences: over.owners ?? [OWNER],
    },
    status: over.ip === "" ? {} : { podIP: over.ip ?? "10.0.0.7" },
  };
}

describe("podRoute", () => {
  it("gives no route to a host-network pod: its IP is the node's", () => {
    const onHost = pod();
    onHost.spec = { containers: [], hostNetwork: true };
    expect(podRoute(onHost)).toBeUndefined();
    const sameIp = pod();
    sameIp.status = { podIP: "10.0.0.7", hostIP: "10.0.0.7" };
    expect(podRoute(sameIp)).toBeUndefined();
    const own = pod();
    own.status = { podIP: "10.0.0.7", hostIP: "10.240.0.1" };
    expect(podRoute(own)?.podIP).toBe("10.0.0.7");
  });

  it("routes a Running sandbox to its pod IP, keyed by sandbox id and pod uid", () => {
    expect(podRoute(pod())).toEqual({
      sandboxId: "sbx-a",
      podIP: "10.0.0.7",
      namespace: "ns",
      podName: "p-0",
      podUid: "uid-1",
      runsEnvd: true,
    });
  });

  it("carries the last-active annotation and the idle timeout the activity writes compare with", () => {
    const p = pod();
    p.metadata = {
      ...p.metadata,
      annotations: {
        "agentbox.navix.sh/last-active": "2026-01-01T00:00:00Z",
        "agentbox.navix.sh/idle-timeout": "5",
      },
    };
    expect(podRoute(p)).toMatchObject({ lastActive: "2026-01-01T00:00:00Z", idleTimeoutSeconds: 5 });
    p.metadata.annotations = { "agentbox.navix.sh/idle-timeout": "soon" };
    expect(podRoute(p)).not.toHaveProperty("idleTimeoutSeconds");
  });

  it("gives no route to a sandbox that is not Running, has hooks pending, or has no IP or id", () => {
    for (const phase of ["starting", "stopping", "idle", "failed"])
      expect(podRoute(pod({ phase }))).toBeUndefined();
    expect(podRoute(pod({ hooks: true }))).toBeUndefined();
    expect(podRoute(pod({ ip: "" }))).toBeUndefined();
    expect(podRoute(pod({ id: "" }))).toBeUndefined();
  });

  // A pod anyone creates with a victim's id label would otherwise take the victim's route (and
  // its envd token): only a pod a SandboxPool controls, named by its pool label, carries one.
  it("gives no route to a pod no pool controls, whatever its labels say", () => {
    expect(podRoute(pod({ owners: [] }))).toBeUndefined();
    expect(podRoute(pod({ owners: [{ ...OWNER, controller: false }] }))).toBeUndefined();
    expect(
      podRoute(pod({ owners: [{ ...OWNER, kind: "ReplicaSet", apiVersion: "apps/v1" }] })),
    ).toBeUndefined();
    expect(podRoute(pod({ owners: [{ ...OWNER, apiVersion: "evil.example/v1" }] }))).toBeUndefined();
    expect(podRoute(pod({ owners: [{ ...OWNER, uid: "" }] }))).toBeUndefined();
    expect(podRoute(pod({ poolLabel: "other" }))).toBeUndefined();
  });
});

describe("upstreamPort", () => {
  it("sends envd's port to where the pods' envd listens, and any other port as is", () => {
    expect(upstreamPort(49983, 41234)).toBe(41234);
    expect(upstreamPort(3000, 41234)).toBe(3000);
  });
});
