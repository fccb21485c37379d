import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { pickIdle } from "../../lib/claims/candidates.ts";
import { homeDistance, ringPoint } from "../../lib/claims/claim-home.ts";
import { SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { mulberry32 } from "../support/seeded-random.ts";

// Which idle pod each host's creates take first (lib/claims/claim-home.ts): the nearest its
// home on a ring of pod names, so hosts that see each other's claims only a moment late rarely
// race for one pod.

const POOL = {
  metadata: { name: "web", namespace: "ns", uid: "pool-uid" },
  spec: { replicas: 1 },
} as SandboxPool;
const pod = (name: string): V1Pod => ({
  metadata: { name, labels: { [SANDBOX_POOL_LABEL]: "web" }, ownerReferences: [poolOwnerReference(POOL)] },
});
const AT = Date.parse("2026-11-26T12:00:00Z");
const RING = 2 ** 32;

describe("ringPoint and homeDistance", () => {
  it("puts instance ids that differ in one character far apart on the ring", () => {
    const points = ["bench-host-0", "bench-host-1", "bench-host-2"].map(ringPoint).sort((a, b) => a - b);
    const gaps = points.map((p, i) => ((points[(i + 1) % points.length] ?? 0) - p + RING) % RING);
    expect(Math.min(...gaps)).toBeGreaterThan(RING / 10);
    expect(ringPoint("bench-host-0")).toBe(ringPoint("bench-host-0"));
  });

  it("measures the shorter way round the ring", () => {
    const name = "web-7";
    const p = ringPoint(name);
    expect(homeDistance(name, p)).toBe(0);
    expect(homeDistance(name, (p + 10) % RING)).toBe(10);
    expect(homeDistance(name, (p - 10 + RING) % RING)).toBe(10);
    expect(homeDistance(name, (p + RING / 2) % RING)).toBe(RING / 2);
  });
});

describe("pickIdle with ranks", () => {
  const feed: [string, { pod: V1Pod; markedAt?: number; rank?: number }][] = [
    ["far", { pod: pod("far"), rank: 30 }],
    ["near", { pod: pod("near"), rank: 10 }],
    ["mid", { pod: pod("mid"), rank: 20 }],
    ["marked", { pod: pod("marked"), rank: 0, markedAt: AT - 1_000 }],
  ];
  it("takes the nearest unmarked pod no other create holds, whatever random says", () => {
    expect(pickIdle(POOL, feed, new Set(), AT, undefined, () => 0)).toBe("near");
    expect(pickIdle(POOL, feed, new Set(), AT, undefined, () => 0.99)).toBe("near");
    expect(pickIdle(POOL, feed, new Set(["near"]), AT, undefined, () => 0)).toBe("mid");
  });
  it("marked pods still come after every unmarked one, however near", () => {
    expect(pickIdle(POOL, feed, new Set(["near", "mid", "far"]), AT, undefined, () => 0.5)).toBe("marked");
  });
  it("pods without a rank are taken at random, after the ranked ones", () => {
    const mixed: [string, { pod: V1Pod; rank?: number }][] = [
      ["a", { pod: pod("a") }],
      ["b", { pod: pod("b") }],
      ["r", { pod: pod("r"), rank: 99 }],
    ];
    expect(pickIdle(POOL, mixed, new Set(), AT, undefined, () => 0)).toBe("r");
    expect(pickIdle(POOL, mixed, new Set(["r"]), AT, undefined, () => 0.99)).toBe("b");
  });
});

describe("hosts that see each other's claims late", () => {
  /**
   * raced: hosts take pods from one pool in turn, each seeing another host's claim only `lag`
   * turns after it was made (its feed's watch is behind); a pick that another host already
   * claimed is a lost race. It returns the races lost.
   */
  function raced(homes: (number | undefined)[], pool: number, takes: number, lag: number, seed: number) {
    const random = mulberry32(seed);
    const names = Array.from({ length: pool }, (_, i) => `burst-${i}`);
    const claimed = new Map<string, { turn: number; host: number }>();
    let lost = 0;
    for (let turn = 0; turn < takes; turn++) {
      const host = turn % homes.length;
      const home = homes[host];
      // What this host's feed still offers: pods not claimed, or claimed by another host too
      // recently for it to know (its own claims it knows at once).
      const known = (n: string) => {
        const c = claimed.get(n);
        return c !== undefined && (c.host === host || c.turn <= turn - lag);
      };
      const offered = names
        .filter((n) => !known(n))
        .map((n): [string, { pod: V1Pod; rank?: number }] => [
          n,
          { pod: pod(n), ...(home === undefined ? {} : { rank: homeDistance(n, home) }) },
        ]);
      const pick = pickIdle(POOL, offered, new Set(), AT, undefined, random);
      if (pick === undefined) break;
      if (claimed.has(pick)) lost++;
      else claimed.set(pick, { turn, host });
    }
    return lost;
  }

  it("lose far fewer races nearest their homes than at random while pods are plentiful, and fewer still when the pool runs dry", () => {
    const homes = ["bench-host-0", "bench-host-1", "bench-host-2"].map(ringPoint);
    const none = [undefined, undefined, undefined];
    for (const seed of [1, 2, 3]) {
      // 450 claims of a pool of 600, each host a tenth of the pool late.
      const random = raced(none, 600, 450, 30, seed);
      expect(random).toBeGreaterThan(10);
      expect(raced(homes, 600, 450, 30, seed)).toBeLessThan(random / 3);
      // More claims than pods: at the end every host races for the last ones.
      expect(raced(homes, 600, 700, 30, seed)).toBeLessThan(raced(none, 600, 700, 30, seed));
    }
  });
});
