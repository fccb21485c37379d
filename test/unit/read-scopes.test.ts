import type { CoreV1Event, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { idSelectors, SELECTOR_CHARS } from "../../lib/claims/activity.ts";
import { sandboxWarningEvents, warningEventSelector } from "../../lib/claims/sandbox-events.ts";
import { ownedBy, tenantSelector } from "../../lib/claims/tenant-scope.ts";
import { CLAIMED_AT_ANNOTATION, SANDBOX_ID_LABEL, TEAM_LABEL, USER_LABEL } from "../../lib/crd/keys.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";

// What the sandbox API's reads ask the apiserver for (issue #23): ids packed into few bounded
// selectors, a tenant's scope as selector terms, and the events that explain a sandbox.

const inSet = (selector: string) => /in \(([^)]*)\)/.exec(selector)?.[1]?.split(",") ?? [];

describe("idSelectors", () => {
  const ids = Array.from({ length: 1000 }, newSandboxId);

  it("packs 1,000 minted ids into 4 selectors, each id once, each within the budget", () => {
    const selectors = idSelectors(SANDBOX_ID_LABEL, ids);
    expect(selectors).toHaveLength(4);
    expect(selectors.flatMap(inSet)).toEqual(ids);
    for (const s of selectors) expect(encodeURIComponent(s).length).toBeLessThanOrEqual(SELECTOR_CHARS);
  });

  it("carries the scope terms in every selector, and counts them against the budget", () => {
    const scope = tenantSelector({ team: "research", user: "alice" });
    const selectors = idSelectors(SANDBOX_ID_LABEL, ids.slice(0, 300), scope, 2000);
    for (const s of selectors) {
      expect(s.endsWith(`,${TEAM_LABEL}=research,${USER_LABEL}=alice`)).toBe(true);
      expect(encodeURIComponent(s).length).toBeLessThanOrEqual(2000);
    }
    expect(selectors.flatMap(inSet)).toEqual(ids.slice(0, 300));
  });

  it("one id is one selector; none is none; an id longer than the budget still gets its own", () => {
    expect(idSelectors(SANDBOX_ID_LABEL, ["sbx-a"])).toEqual([`${SANDBOX_ID_LABEL} in (sbx-a)`]);
    expect(idSelectors(SANDBOX_ID_LABEL, [])).toEqual([]);
    const long = "a".repeat(63);
    expect(idSelectors("l", [long, long], [], 10)).toEqual([`l in (${long})`, `l in (${long})`]);
  });
});

describe("tenant scope", () => {
  const pod = (team: string, user: string): V1Pod => ({
    metadata: { labels: { [TEAM_LABEL]: team, [USER_LABEL]: user } },
  });

  it("an admin sees every pod and adds no selector term; a tenant only its team and user's", () => {
    expect(tenantSelector({ team: "t", user: "u", admin: true })).toEqual([]);
    expect(ownedBy(pod("x", "y"), { team: "t", user: "u", admin: true })).toBe(true);
    expect(tenantSelector({ team: "t", user: "u" })).toEqual([`${TEAM_LABEL}=t`, `${USER_LABEL}=u`]);
    expect(ownedBy(pod("t", "u"), { team: "t", user: "u" })).toBe(true);
    expect(ownedBy(pod("t", "v"), { team: "t", user: "u" })).toBe(false);
  });
});

describe("sandboxWarningEvents", () => {
  const detail = { reason: "Pulling", message: "m", lastUpdatedTime: "2026-05-10T12:00:00Z" };
  const pod: V1Pod = {
    metadata: {
      name: "p1",
      namespace: "ns",
      uid: "uid-1",
      annotations: { [CLAIMED_AT_ANNOTATION]: "2026-05-10T11:15:00Z" },
    },
  };
  const event = (reason: string, at: string): CoreV1Event => ({
    metadata: { name: reason, namespace: "ns" },
    involvedObject: { kind: "Pod", name: "p1", namespace: "ns", uid: "uid-1" },
    type: "Warning",
    reason,
    message: reason,
    lastTimestamp: new Date(at),
  });

  it("keeps only the events since the sandbox's claim: the same pod's earlier sandbox's are not its", () => {
    const events = [event("DuringA", "2026-05-10T11:00:00Z"), event("DuringB", "2026-05-10T11:20:00Z")];
    expect(sandboxWarningEvents(detail, pod, events).events.map((e) => e.reason)).toEqual(["DuringB"]);
  });

  it("without a claimed-at annotation, keeps all of the pod's", () => {
    const unclaimed = { metadata: { ...pod.metadata, annotations: {} } };
    const events = [event("DuringA", "2026-05-10T11:00:00Z"), event("DuringB", "2026-05-10T11:20:00Z")];
    expect(sandboxWarningEvents(detail, unclaimed, events).events.map((e) => e.reason)).toEqual([
      "DuringB",
      "DuringA",
    ]);
  });

  it("reads exactly the pod's Warning events", () => {
    expect(warningEventSelector(pod)).toBe("involvedObject.name=p1,type=Warning");
  });
});
