import { describe, expect, it } from "vitest";
import { hostKey } from "../../functions/api/pending-gauge.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import {
  decodeMark,
  encodeMark,
  PENDING_REQUESTS_PREFIX,
  pendingRequestsOf,
  shouldPublish,
} from "../../lib/pool/pending-requests.ts";

// status.pendingRequests: each host's published count of waiting creates, throttled, and summed.

const NOW = new Date("2026-11-21T12:00:00Z");
const ago = (s: number) => new Date(NOW.getTime() - s * 1000);

describe("pending requests", () => {
  it("publishes at once across 0/>0, else for a 20 % move at most every 3 s", () => {
    expect(shouldPublish(undefined, 0, NOW)).toBe(false);
    expect(shouldPublish(undefined, 1, NOW)).toBe(true);
    expect(shouldPublish({ count: 5, at: NOW }, 0, NOW)).toBe(true);
    expect(shouldPublish({ count: 0, at: NOW }, 1, NOW)).toBe(true);
    expect(shouldPublish({ count: 10, at: ago(1) }, 20, NOW)).toBe(false);
    expect(shouldPublish({ count: 10, at: ago(3) }, 12, NOW)).toBe(true);
    expect(shouldPublish({ count: 10, at: ago(30) }, 11, NOW)).toBe(false);
    expect(shouldPublish({ count: 10, at: ago(30) }, 10, NOW)).toBe(false);
  });

  it("sums the fresh marks of every host and ignores stale or garbled ones", () => {
    const pool = {
      metadata: {
        annotations: {
          [`${PENDING_REQUESTS_PREFIX}host-a`]: encodeMark({ count: 3, at: ago(2) }),
          [`${PENDING_REQUESTS_PREFIX}host-b`]: encodeMark({ count: 4, at: ago(59) }),
          [`${PENDING_REQUESTS_PREFIX}host-c`]: encodeMark({ count: 50, at: ago(61) }),
          [`${PENDING_REQUESTS_PREFIX}host-d`]: "lots",
          "other/key": "9 2026-11-21T12:00:00Z",
        },
      },
    } as unknown as SandboxPool;
    expect(pendingRequestsOf(pool, NOW)).toBe(7);
    expect(pendingRequestsOf({ metadata: {} } as SandboxPool, NOW)).toBe(0);
  });

  it("round-trips marks and names hosts with valid annotation keys", () => {
    expect(decodeMark(encodeMark({ count: 2, at: NOW }))).toEqual({ count: 2, at: NOW });
    expect(decodeMark("-1 2026-11-21T12:00:00Z")).toBeUndefined();
    expect(decodeMark("2 soon")).toBeUndefined();
    expect(hostKey("Pod_Host:8443")).toBe(`${PENDING_REQUESTS_PREFIX}pod_host-8443`);
    expect(hostKey("x".repeat(80)).length).toBe(PENDING_REQUESTS_PREFIX.length + 63);
    expect(hostKey("!!!")).toBe(`${PENDING_REQUESTS_PREFIX}host`);
  });
});
