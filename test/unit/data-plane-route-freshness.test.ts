import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type PodRoute, podRoute } from "../../lib/data-plane/pod-route.ts";
import { ROUTE_TRUST_MS, recheckKeeps, routeTrusted } from "../../lib/data-plane/route-freshness.ts";

/** pod is a Running sandbox pod of pool p (labels, annotation, controlling reference). */
function pod(over: { id?: string; uid?: string; ip?: string; phase?: string; owned?: boolean } = {}): V1Pod {
  const id = over.id ?? "sbx-a";
  return {
    metadata: {
      name: "p-0",
      namespace: "ns",
      uid: over.uid ?? "uid-1",
      labels: {
        "agentbox.navix.sh/sandbox-pool": "p",
        "agentbox.navix.sh/sandbox-phase": over.phase ?? "running",
        "agentbox.navix.sh/sandbox-id": id,
      },
      annotations: { "agentbox.navix.sh/sandbox-id": id },
      ownerReferences:
        over.owned === false
          ? []
          : [
              {
                apiVersion: "agents.navix.sh/v1alpha1",
                kind: "SandboxPool",
                name: "p",
                uid: "u",
                controller: true,
              },
            ],
    },
    status: { podIP: over.ip ?? "10.0.0.7" },
  };
}

const route = podRoute(pod()) as PodRoute;

describe("routeTrusted", () => {
  it("trusts a route the watch or a read confirmed within the bound, and nothing older", () => {
    const now = 1_000_000;
    expect(routeTrusted({ routeAt: now - ROUTE_TRUST_MS, tableAt: 0 }, now)).toBe(true);
    expect(routeTrusted({ routeAt: now - ROUTE_TRUST_MS - 1, tableAt: 0 }, now)).toBe(false);
    // The watch heard something lately (an event, a bookmark): everything it holds is current.
    expect(routeTrusted({ routeAt: 0, tableAt: now - 2_000 }, now)).toBe(true);
    // A watch silent (failing, lagging) for longer than the bound vouches for nothing.
    expect(routeTrusted({ routeAt: 0, tableAt: now - ROUTE_TRUST_MS - 1 }, now)).toBe(false);
    expect(routeTrusted({ routeAt: Number.NEGATIVE_INFINITY, tableAt: Number.NEGATIVE_INFINITY }, now)).toBe(
      false,
    );
    expect(routeTrusted({ routeAt: now - 500, tableAt: 0 }, now, 100)).toBe(false);
  });
});

describe("recheckKeeps", () => {
  it("keeps a route only while its pod is the same pod, Running for the same sandbox at the same IP", () => {
    expect(recheckKeeps(route, pod())).toBe(true);
    // Released and claimed again in place: same pod, same IP, another sandbox.
    expect(recheckKeeps(route, pod({ id: "sbx-b" }))).toBe(false);
    expect(recheckKeeps(route, undefined)).toBe(false);
    expect(recheckKeeps(route, pod({ uid: "uid-2" }))).toBe(false);
    expect(recheckKeeps(route, pod({ ip: "10.0.0.8" }))).toBe(false);
    expect(recheckKeeps(route, pod({ phase: "stopping" }))).toBe(false);
    expect(recheckKeeps(route, pod({ owned: false }))).toBe(false);
  });
});
