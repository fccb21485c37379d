import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  OWNER_DOUBT_MS,
  OWNER_TRUST_MS,
  ownerConfirmed,
  ownerKey,
  routeOwnerOf,
  verdictCurrent,
} from "../../lib/data-plane/route-owner.ts";

const REF = {
  apiVersion: "agents.navix.sh/v1alpha1",
  kind: "SandboxPool",
  name: "p",
  uid: "u1",
  controller: true,
};

function pod(refs: object[], poolLabel = "p", namespace = "ns"): V1Pod {
  return {
    metadata: {
      namespace,
      labels: { "agentbox.navix.sh/sandbox-pool": poolLabel },
      ownerReferences: refs as never,
    },
  };
}

describe("routeOwnerOf", () => {
  it("is the controlling SandboxPool named by the pod's pool label, in the pod's namespace", () => {
    expect(routeOwnerOf(pod([REF]))).toEqual({ namespace: "ns", pool: "p", uid: "u1" });
    expect(routeOwnerOf(pod([{ ...REF, controller: false }]))).toBeUndefined();
    expect(routeOwnerOf(pod([REF], "q"))).toBeUndefined();
    expect(routeOwnerOf(pod([]))).toBeUndefined();
    expect(routeOwnerOf(pod([REF], "p", ""))).toBeUndefined();
  });
});

describe("ownerConfirmed", () => {
  const owner = { namespace: "ns", pool: "p", uid: "u1" };
  it("holds only for the pool of that name and uid in the pod's own namespace", () => {
    expect(ownerConfirmed(owner, { metadata: { namespace: "ns", name: "p", uid: "u1" } })).toBe(true);
    // A forged reference: the uid of no pool, or of a pool elsewhere.
    expect(ownerConfirmed(owner, { metadata: { namespace: "ns", name: "p", uid: "u2" } })).toBe(false);
    expect(ownerConfirmed(owner, { metadata: { namespace: "other", name: "p", uid: "u1" } })).toBe(false);
    expect(ownerConfirmed(owner, undefined)).toBe(false);
    expect(ownerKey(owner)).toBe("ns/p/u1");
  });
});

describe("verdictCurrent", () => {
  it("believes a confirmation for OWNER_TRUST_MS and a refusal for OWNER_DOUBT_MS", () => {
    expect(verdictCurrent({ owned: true, at: 0 }, OWNER_TRUST_MS)).toBe(true);
    expect(verdictCurrent({ owned: true, at: 0 }, OWNER_TRUST_MS + 1)).toBe(false);
    expect(verdictCurrent({ owned: false, at: 0 }, OWNER_DOUBT_MS)).toBe(true);
    expect(verdictCurrent({ owned: false, at: 0 }, OWNER_DOUBT_MS + 1)).toBe(false);
    expect(verdictCurrent({ owned: true, at: 10 }, 5)).toBe(false);
  });
});
