import { describe, expect, it } from "vitest";
import { newestVersion, reachedVersion } from "../../lib/kube/resource-version.ts";
import type { PodKey, PodTarget } from "../../lib/triggers/audit-targets.ts";
import { PoolRunVersions, READ_AFRESH } from "../../lib/triggers/pool-run-versions.ts";

// What a pool's audit-triggered run must have seen before it may plan from a host's view of the
// pool pods (ADR 0039), from the versions the audit batches reported for the pool's pods.

const written = (key: PodKey, notOlderThan: string | undefined): [PodKey, PodTarget] => [
  key,
  { notOlderThan },
];

describe("PoolRunVersions", () => {
  it("keeps the newest version reported for each pool's pods until the pool's run takes it", () => {
    const v = new PoolRunVersions();
    v.note([written("ns/p/a", "120"), written("ns/p/b", "95"), written("ns/q/c", "7")]);
    v.note([written("ns/p/a", "110")]);
    expect(v.take("ns/p")).toBe("120");
    expect(v.take("ns/p")).toBeUndefined();
    expect(v.take("ns/q")).toBe("7");
    // A pool nothing reported for: the view as it is.
    expect(v.take("other/p")).toBeUndefined();
  });

  it("asks for a list when a write reported no version or one that cannot be ordered, until taken", () => {
    const v = new PoolRunVersions();
    v.note([written("ns/p/a", undefined)]);
    v.note([written("ns/p/a", "500")]);
    expect(v.take("ns/p")).toBe(READ_AFRESH);
    v.note([written("ns/p/a", "300"), written("ns/p/b", "x9")]);
    expect(v.take("ns/p")).toBe(READ_AFRESH);
    v.note([written("ns/p/a", "301")]);
    expect(v.take("ns/p")).toBe("301");
  });
});

describe("resource versions in order", () => {
  it("newestVersion orders plain integers as numbers, and nothing else", () => {
    expect(newestVersion("99", "100")).toBe("100");
    expect(newestVersion("100", "99")).toBe("100");
    expect(newestVersion("100", "0100")).toBeUndefined();
    expect(newestVersion(undefined, "5")).toBeUndefined();
  });

  it("reachedVersion: a stream at or past the version has passed it", () => {
    expect(reachedVersion("100", "100")).toBe(true);
    expect(reachedVersion("1000", "999")).toBe(true);
    expect(reachedVersion("999", "1000")).toBe(false);
    expect(reachedVersion(undefined, "1")).toBe(false);
    expect(reachedVersion("10", "abc")).toBe(false);
  });
});
