import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { HeldRoutes } from "../../hosts/node/data-plane/held-routes.ts";
import type { PoolOwners } from "../../hosts/node/data-plane/pool-owners.ts";

/** owned is a PoolOwners that has read every pool already, and found it real. */
const owned = { known: () => true, check: async () => true } as unknown as PoolOwners;

/** sandboxPod is a Running sandbox pod of pool p in `namespace`, a pool's controlled pod. */
function sandboxPod(uid: string, id: string, ip: string, version: number, namespace = "ns"): V1Pod {
  return {
    metadata: {
      name: `p-${uid}`,
      namespace,
      uid,
      resourceVersion: String(version),
      labels: {
        "agentbox.navix.sh/sandbox-pool": "p",
        "agentbox.navix.sh/sandbox-phase": "running",
        "agentbox.navix.sh/sandbox-id": id,
      },
      annotations: { "agentbox.navix.sh/sandbox-id": id },
      ownerReferences: [
        {
          apiVersion: "agents.navix.sh/v1alpha1",
          kind: "SandboxPool",
          name: "p",
          uid: "pool",
          controller: true,
        },
      ],
    },
    status: { podIP: ip },
  };
}

describe("HeldRoutes with two pods claiming one sandbox id", () => {
  it("routes neither while both claim it, whichever came last, and the real one again once alone", () => {
    const dropped: string[] = [];
    const held = new HeldRoutes(
      owned,
      () => 1000,
      (id) => dropped.push(id),
    );
    held.apply(sandboxPod("real", "sbx-v", "10.0.0.1", 1), false);
    expect(held.get("sbx-v")?.podUid).toBe("real");

    // A pod in the pool's own namespace, with the pool's uid copied in: it takes nothing.
    held.apply(sandboxPod("impostor", "sbx-v", "10.0.0.9", 2), false);
    expect(held.get("sbx-v")).toBeUndefined();
    expect(held.contested("sbx-v")).toBe(true);
    expect(dropped).toEqual(["sbx-v"]);
    // The real pod's next event does not win it back while the impostor claims it.
    held.apply(sandboxPod("real", "sbx-v", "10.0.0.1", 3), false);
    expect(held.get("sbx-v")).toBeUndefined();

    held.apply(sandboxPod("impostor", "sbx-v", "10.0.0.9", 4), true);
    expect(held.contested("sbx-v")).toBe(false);
    held.apply(sandboxPod("real", "sbx-v", "10.0.0.1", 5), false);
    expect(held.get("sbx-v")?.podUid).toBe("real");
  });

  it("an impostor first, the real pod next: neither is routed", () => {
    const held = new HeldRoutes(owned, () => 1000);
    held.apply(sandboxPod("impostor", "sbx-v", "10.0.0.9", 1), false);
    held.apply(sandboxPod("real", "sbx-v", "10.0.0.1", 2), false);
    expect(held.get("sbx-v")).toBeUndefined();
    // A pod that now claims another id gives the first up: the real one routes on its next event.
    held.apply(sandboxPod("impostor", "sbx-other", "10.0.0.9", 3), false);
    held.apply(sandboxPod("real", "sbx-v", "10.0.0.1", 4), false);
    expect(held.get("sbx-v")?.podUid).toBe("real");
    expect(held.get("sbx-other")?.podUid).toBe("impostor");
  });
});
