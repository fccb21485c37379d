import { describe, expect, it } from "vitest";
import { type AuditEvent, auditPodTargets, auditTargets } from "../../lib/triggers/audit-targets.ts";

const pod = (
  verb: string,
  pool: string | undefined,
  code = 200,
  where: "response" | "request" = "response",
): AuditEvent => {
  const labels: Record<string, string> = pool ? { "agentbox.navix.sh/sandbox-pool": pool } : {};
  const obj = { kind: "Pod", metadata: { labels } };
  return {
    verb,
    objectRef: { resource: "pods", namespace: "ns", name: "p" },
    responseStatus: { code },
    ...(where === "response" ? { responseObject: obj } : { requestObject: obj }),
  };
};
const poolEvent = (verb: string, name: string, subresource?: string): AuditEvent => ({
  verb,
  objectRef: {
    resource: "sandboxpools",
    apiGroup: "agents.navix.sh",
    namespace: "ns",
    name,
    ...(subresource ? { subresource } : {}),
  },
  responseStatus: { code: 200 },
});

describe("auditTargets", () => {
  it("maps pod writes to their pool and pool writes to the pool, each once", () => {
    expect(
      auditTargets([
        pod("patch", "a"),
        pod("update", "a"),
        pod("create", "b", 201),
        poolEvent("patch", "c", "status"),
        poolEvent("update", "a"),
      ]),
    ).toEqual(["ns/a", "ns/b", "ns/c"]);
  });

  it("skips reads, failed requests, unlabelled pods and other resources", () => {
    expect(
      auditTargets([
        pod("get", "a"),
        pod("patch", "a", 409),
        pod("patch", undefined),
        { verb: "patch", objectRef: { resource: "configmaps", namespace: "ns", name: "x" } },
        { verb: "patch" },
      ]),
    ).toEqual([]);
  });

  it("falls back to the request body's labels (e.g. a create whose response was not recorded)", () => {
    expect(auditTargets([pod("create", "z", 201, "request")])).toEqual(["ns/z"]);
  });
});

describe("auditPodTargets", () => {
  const write = (
    verb: string,
    name: string,
    pool: string | undefined,
    code = 200,
    resourceVersion?: string,
  ): AuditEvent => ({
    verb,
    objectRef: { resource: "pods", namespace: "ns", name },
    responseStatus: { code },
    responseObject: {
      metadata: {
        labels: pool ? { "agentbox.navix.sh/sandbox-pool": pool } : {},
        ...(resourceVersion ? { resourceVersion } : {}),
      },
    },
  });

  it("names each written pool pod once, with its pool, and skips the rest", () => {
    expect([
      ...auditPodTargets([
        write("patch", "a-0", "a"),
        write("update", "a-0", "a"),
        write("patch", "b-1", "b"),
        write("get", "a-1", "a"),
        write("patch", "x", undefined),
        write("patch", "a-2", "a", 422),
      ]).keys(),
    ]).toEqual(["ns/a/a-0", "ns/b/b-1"]);
  });

  it("reads each pod at least at the newest version the batch reported, in whatever order", () => {
    const targets = auditPodTargets([
      write("patch", "a-0", "a", 200, "1009"),
      write("patch", "a-0", "a", 200, "998"),
      write("patch", "a-1", "a", 200, "1200"),
    ]);
    expect(targets.get("ns/a/a-0")).toEqual({ notOlderThan: "1009" });
    expect(targets.get("ns/a/a-1")).toEqual({ notOlderThan: "1200" });
  });

  it("carries the pod the newest write recorded whole, and only that one", () => {
    const whole = (name: string, resourceVersion: string, verb = "patch"): AuditEvent => ({
      verb,
      objectRef: { resource: "pods", namespace: "ns", name },
      responseStatus: { code: 200 },
      responseObject: {
        kind: "Pod",
        apiVersion: "v1",
        metadata: { labels: { "agentbox.navix.sh/sandbox-pool": "a" }, resourceVersion },
        spec: { containers: [] },
      },
    });
    const targets = auditPodTargets([
      whole("a-0", "20"),
      whole("a-0", "10"),
      whole("a-1", "10"),
      write("patch", "a-1", "a", 200, "30"),
      whole("a-2", "40", "delete"),
    ]);
    expect(targets.get("ns/a/a-0")?.reported?.metadata?.resourceVersion).toBe("20");
    // The newest write of a-1 recorded no whole pod: the older one it did record is no use.
    expect(targets.get("ns/a/a-1")).toEqual({ notOlderThan: "30" });
    // A delete's answer is never acted on.
    expect(targets.get("ns/a/a-2")).toEqual({ notOlderThan: "40" });
  });

  it("asks for a quorum read when a version is missing or cannot be ordered", () => {
    const targets = auditPodTargets([
      write("patch", "a-0", "a", 200, "12"),
      write("patch", "a-0", "a", 200),
      write("patch", "a-1", "a", 200, "12"),
      write("patch", "a-1", "a", 200, "opaque-v7"),
      write("patch", "a-2", "a"),
    ]);
    expect(targets.get("ns/a/a-0")).toEqual({ notOlderThan: undefined });
    expect(targets.get("ns/a/a-1")).toEqual({ notOlderThan: undefined });
    expect(targets.get("ns/a/a-2")).toEqual({ notOlderThan: undefined });
  });
});
