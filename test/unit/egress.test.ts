import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { NetworkUpdateRequest } from "../../lib/claims/schemas.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { networkFields } from "../../lib/e2b/answers.ts";
import { nativeCreate } from "../../lib/e2b/requests.ts";
import { NetworkUpdate, NewSandboxV2 } from "../../lib/e2b/schemas.ts";
import { contains, formatCidr, parseCidr } from "../../lib/egress/cidr.ts";
import { networkMarks, networkOf, updatedNetwork } from "../../lib/egress/network.ts";
import { networkPatch } from "../../lib/egress/network-patch.ts";
import { ORPHAN_GRACE_MS, orphanCandidates } from "../../lib/egress/orphans.ts";
import {
  canNamePolicy,
  egressBlocks,
  egressPolicy,
  INTERNAL_RANGES,
  internalAllow,
} from "../../lib/egress/policy.ts";
import { claimIntent } from "../../lib/lifecycle/claim-intent.ts";

// Issue #38, point 3: a sandbox's egress rules, checked and turned into its NetworkPolicy, as plain
// data. What the apiserver makes of the policy is test/integration/egress-policies.test.ts.

const canonical = (s: string) => {
  const c = parseCidr(s);
  return c && formatCidr(c);
};

describe("IP blocks", () => {
  it.each([
    ["8.8.8.8", "8.8.8.8/32"],
    ["8.8.8.8/24", "8.8.8.0/24"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["2001:DB8::1", "2001:db8::1/128"],
    ["2001:db8:0:0:1:0:0:1/128", "2001:db8::1:0:0:1/128"],
    ["::/0", "::/0"],
    ["::ffff:1.2.3.4", "::ffff:102:304/128"],
    ["fe80::1/10", "fe80::/10"],
  ])("reads %s as %s", (input, out) => {
    expect(canonical(input)).toBe(out);
  });

  it.each([
    "example.com",
    "*.example.com",
    "01.2.3.4",
    "1.2.3.4/33",
    "1.2.3",
    "1.2.3.4/08",
    "::1::2",
    "1:2:3:4:5:6:7:8:9",
    "1.2.3.4::",
    "",
    "1.2.3.4/24/1",
  ])("refuses %j", (input) => {
    expect(parseCidr(input)).toBeUndefined();
  });

  it("tells containment within a family only", () => {
    const p = (s: string) => parseCidr(s) ?? { family: 4 as const, network: 0n, prefix: 0 };
    expect(contains(p("10.0.0.0/8"), p("10.1.2.3"))).toBe(true);
    expect(contains(p("10.1.2.3"), p("10.0.0.0/8"))).toBe(false);
    expect(contains(p("0.0.0.0/0"), p("::1"))).toBe(false);
    expect(contains(p("fc00::/7"), p("fd12::1"))).toBe(true);
  });
});

describe("the egress blocks of a sandbox", () => {
  it("denies the named blocks on top of the internal ranges, per family", () => {
    const blocks = egressBlocks({ denyOut: ["1.1.1.1", "2606:4700::/32", "10.1.0.0/16"] });
    expect(blocks).toEqual([
      {
        cidr: "0.0.0.0/0",
        except: [
          "1.1.1.1/32",
          "10.0.0.0/8",
          "100.64.0.0/10",
          "127.0.0.0/8",
          "169.254.0.0/16",
          "172.16.0.0/12",
          "192.168.0.0/16",
        ],
      },
      { cidr: "::/0", except: ["::1/128", "2606:4700::/32", "fc00::/7", "fe80::/10"] },
    ]);
  });

  it("denies IPv6 as well for 0.0.0.0/0 (E2B's all traffic) and for internet access off", () => {
    expect(egressBlocks({ denyOut: ["0.0.0.0/0"] })).toEqual([]);
    expect(egressBlocks({ allowInternetAccess: false })).toEqual([]);
    // ::/0 alone denies only IPv6.
    expect(egressBlocks({ denyOut: ["::/0"] }).map((b) => b.cidr)).toEqual(["0.0.0.0/0"]);
  });

  it("lets allowOut win over denyOut, keeping the internal ranges out of a wide allow", () => {
    expect(egressBlocks({ denyOut: ["0.0.0.0/0"], allowOut: ["8.8.8.8", "8.8.8.0/24", "1.1.1.1"] })).toEqual([
      { cidr: "1.1.1.1/32" },
      { cidr: "8.8.8.0/24" },
    ]);
    expect(egressBlocks({ allowInternetAccess: false, allowOut: ["0.0.0.0/1"] })).toEqual([
      { cidr: "0.0.0.0/1", except: ["10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8"] },
    ]);
  });

  it("refuses an allowOut inside an internal range (other pods, another tenant's sandbox)", () => {
    expect(internalAllow(["8.8.8.8", "10.244.1.7"])).toEqual({ entry: "10.244.1.7", range: "10.0.0.0/8" });
    expect(internalAllow(["169.254.169.254"])?.range).toBe("169.254.0.0/16");
    expect(internalAllow(["fd00::1"])?.range).toBe("fc00::/7");
    expect(internalAllow(["0.0.0.0/0", "8.8.8.8"])).toBeUndefined();
  });

  it("selects exactly the sandbox's id and the egress label, egress only", () => {
    const policy = egressPolicy("ns", "sbx-1", { allowInternetAccess: false });
    expect(policy.metadata.name).toBe("agentbox-egress-sbx-1");
    expect(policy.spec).toEqual({
      podSelector: {
        matchLabels: { "agentbox.navix.sh/sandbox-id": "sbx-1", "agentbox.navix.sh/egress": "custom" },
      },
      policyTypes: ["Egress"],
      egress: [],
    });
    expect(INTERNAL_RANGES).toContain("169.254.0.0/16");
    // A sandbox id of another format may not make a policy name: such a sandbox gets no rules.
    expect(canNamePolicy("sbx-abcdefghijklmnopqrst")).toBe(true);
    expect(canNamePolicy("Sandbox_1")).toBe(false);
  });
});

describe("the APIs' network rules", () => {
  it("refuses domain names, per-domain rules, a proxy and a host mask, saying what is supported", () => {
    for (const network of [
      { allowOut: ["example.com"] },
      { denyOut: ["*.example.com"] },
      { rules: { "api.example.com": [{}] } },
      { egressProxy: { address: "p:1080" } },
      { maskRequestHost: "x.example.com" },
    ]) {
      const parsed = parseWith(NewSandboxV2, { templateID: "t", network });
      expect(parsed.ok, JSON.stringify(network)).toBe(false);
      if (!parsed.ok) expect(parsed.issues[0]?.message).toMatch(/CIDR blocks? (or an|and) IP/);
    }
    const inside = parseWith(NewSandboxV2, { templateID: "t", network: { allowOut: ["10.0.0.5"] } });
    expect(inside.ok).toBe(false);
    if (!inside.ok) expect(inside.issues[0]?.message).toMatch(/10\.0\.0\.5 lies in 10\.0\.0\.0\/8/);
  });

  it("maps E2B's create onto the native network, allow_internet_access included", () => {
    const parsed = parseWith(NewSandboxV2, {
      templateID: "t",
      allow_internet_access: false,
      network: { allowOut: ["1.1.1.1"], denyOut: ["8.8.8.8"], allowPublicTraffic: false, rules: {} },
    });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    const native = nativeCreate(parsed.value);
    expect(native).toMatchObject({
      ok: true,
      value: {
        network: {
          allowOut: ["1.1.1.1"],
          denyOut: ["8.8.8.8"],
          allowInternetAccess: false,
          allowPublicTraffic: false,
        },
      },
    });
    const plain = parseWith(NewSandboxV2, { templateID: "t" });
    expect(plain.ok && nativeCreate(plain.value)).toMatchObject({ ok: true, value: {} });
    expect(
      plain.ok && nativeCreate(plain.value).ok && "network" in (nativeCreate(plain.value) as never),
    ).toBe(false);
  });

  it("reads the update bodies: E2B's snake_case, the native camelCase, strict", () => {
    expect(parseWith(NetworkUpdate, { allow_internet_access: false, denyOut: ["0.0.0.0/0"] })).toMatchObject({
      ok: true,
      value: { allow_internet_access: false },
    });
    expect(parseWith(NetworkUpdate, undefined)).toEqual({ ok: true, value: {} });
    expect(parseWith(NetworkUpdateRequest, { allowInternetAccess: false }).ok).toBe(true);
    const typo = parseWith(NetworkUpdateRequest, { allow_out: [] });
    expect(typo.ok).toBe(false);
  });
});

describe("the settings on the pod", () => {
  const pod = (labels: Record<string, string>, annotations: Record<string, string>): V1Pod => ({
    metadata: { name: "p", namespace: "ns", resourceVersion: "7", labels, annotations },
  });

  it("marks a claim: the label only with rules, the annotation with any setting, private traffic", () => {
    expect(networkMarks(undefined)).toEqual({ labels: {}, annotations: {} });
    expect(networkMarks({ allowPublicTraffic: false })).toEqual({
      labels: {},
      annotations: {
        "agentbox.navix.sh/network": '{"allowPublicTraffic":false}',
        "agentbox.navix.sh/traffic": "private",
      },
    });
    expect(networkMarks({ denyOut: ["1.1.1.1"] }).labels).toEqual({ "agentbox.navix.sh/egress": "custom" });
  });

  it("lets a claim carry the marks the return to idle removes, and no other reserved key", () => {
    const idle: V1Pod = {
      metadata: { name: "p", labels: { "agentbox.navix.sh/sandbox-phase": "idle" } },
      spec: { containers: [{ name: "main", image: "img:1" }] },
      status: { phase: "Running", containerStatuses: [] },
    };
    const base = { sandboxId: "sbx-1", containerImages: { main: "img:2" } };
    const marked = claimIntent(
      idle,
      { ...base, marks: networkMarks({ allowInternetAccess: false }) },
      new Date(0),
    );
    expect(marked.ok && marked.intent.setLabels["agentbox.navix.sh/egress"]).toBe("custom");
    const foreign = claimIntent(
      idle,
      { ...base, marks: { labels: { "agentbox.navix.sh/other": "x" } } },
      new Date(0),
    );
    expect(foreign).toMatchObject({ ok: false });
  });

  it("reads the settings back, and an update replaces the egress rules but keeps private traffic", () => {
    const p = pod({}, networkMarks({ allowOut: ["1.1.1.1"], allowPublicTraffic: false }).annotations);
    expect(networkOf(p)).toEqual({ allowOut: ["1.1.1.1"], allowPublicTraffic: false });
    expect(networkOf(pod({}, { "agentbox.navix.sh/network": "{" }))).toEqual({});
    expect(updatedNetwork(networkOf(p), { denyOut: ["0.0.0.0/0"] })).toEqual({
      denyOut: ["0.0.0.0/0"],
      allowPublicTraffic: false,
    });
  });

  it("shows E2B's detail fields: internet off as denyOut 0.0.0.0/0, null when never said", () => {
    const off = pod({}, networkMarks({ allowInternetAccess: false, allowOut: ["1.1.1.1"] }).annotations);
    expect(networkFields(off)).toEqual({
      allowInternetAccess: false,
      network: { allowOut: ["1.1.1.1"], denyOut: ["0.0.0.0/0"] },
    });
    expect(networkFields(pod({}, {}))).toEqual({ allowInternetAccess: null });
  });

  it("patches label and settings under the pod's version and id, and nothing when nothing changes", () => {
    const p = pod({ "agentbox.navix.sh/sandbox-id": "sbx-1" }, {});
    const ops = networkPatch(p, "sbx-1", { denyOut: ["1.1.1.1"] });
    expect(ops.slice(0, 2)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-1" },
    ]);
    expect(ops).toContainEqual({
      op: "add",
      path: "/metadata/labels/agentbox.navix.sh~1egress",
      value: "custom",
    });
    expect(networkPatch(p, "sbx-1", {})).toEqual([]);
    const fenced = pod(
      { "agentbox.navix.sh/sandbox-id": "sbx-1", "agentbox.navix.sh/egress": "custom" },
      networkMarks({ denyOut: ["1.1.1.1"] }).annotations,
    );
    expect(networkPatch(fenced, "sbx-1", {}).slice(2)).toEqual([
      { op: "remove", path: "/metadata/labels/agentbox.navix.sh~1egress" },
      { op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1network" },
    ]);
  });
});

describe("leftover policies", () => {
  const now = new Date("2026-01-01T00:30:00Z");
  const policy = (id: string | undefined, ageMs: number, namespace = "ns") => ({
    metadata: {
      name: `agentbox-egress-${id}`,
      namespace,
      labels: (id ? { "agentbox.navix.sh/sandbox-id": id } : {}) as Record<string, string>,
      creationTimestamp: new Date(now.getTime() - ageMs).toISOString(),
    },
  });

  it("are those past the grace whose sandbox no fenced pod of their namespace carries", () => {
    const old = ORPHAN_GRACE_MS + 1;
    const live = policy("sbx-live", old);
    const orphan = policy("sbx-gone", old);
    const young = policy("sbx-young", ORPHAN_GRACE_MS - 1);
    const elsewhere = policy("sbx-live", old, "other");
    const unnamed = policy(undefined, old);
    const found = orphanCandidates([live, orphan, young, elsewhere, unnamed], new Set(["ns/sbx-live"]), now);
    expect(found).toEqual([orphan, elsewhere]);
  });
});
