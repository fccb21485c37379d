import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { down } from "../../infra/cluster/down.ts";
import { isOurs } from "../../infra/cluster/processes.ts";
import { readState } from "../../infra/cluster/state.ts";
import { isHealthy, up } from "../../infra/cluster/up.ts";
import { kube, newNamespace, until } from "./support/kube.ts";

// What a real cluster gives the product beyond the apiserver: garbage collection and namespace
// deletion (controller-manager), audit delivery to our host, and isolation between clusters.

const { core, cluster } = kube();
let ns: string;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "cp"));
});
afterAll(async () => cleanup());

describe("local control plane", () => {
  it("garbage-collects owned objects (controller-manager)", async () => {
    const owner = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "owner" } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: "dependent",
          ownerReferences: [
            { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid! },
          ],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ name: "owner", namespace: ns });
    await until("dependent garbage-collected", 30_000, async () => {
      const list = await core.listNamespacedConfigMap({
        namespace: ns,
        fieldSelector: "metadata.name=dependent",
      });
      return list.items.length === 0;
    });
  });

  it("deletes a namespace with its pods (namespace controller + kwok)", async () => {
    const scratch = await newNamespace(core, "scratch");
    await core.createNamespacedPod({
      namespace: scratch.ns,
      body: {
        metadata: { name: "p" },
        spec: { containers: [{ name: "main", image: "registry.local/x:1" }] },
      },
    });
    await core.deleteNamespace({ name: scratch.ns });
    await until("namespace gone", 60_000, async () => {
      const list = await core.listNamespace({ fieldSelector: `metadata.name=${scratch.ns}` });
      return list.items.length === 0;
    });
  });

  it("delivers audit events for pod writes to the host's audit sink, authenticated by the callback token", async () => {
    // The sink (webhooks/audit.ts, served by the test host) only accepts batches that carry the
    // cluster's callback token; the global setup appends each accepted event to auditLog, one
    // line each. Only what arrives after the create is read (the file grows over a full run).
    const name = `audited-${randomBytes(3).toString("hex")}`;
    const from = existsSync(cluster.auditLog) ? statSync(cluster.auditLog).size : 0;
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name, labels: { app: "audited" } },
        spec: { containers: [{ name: "main", image: "registry.local/x:1" }] },
      },
    });
    type Event = {
      verb: string;
      objectRef?: { resource?: string; namespace?: string; name?: string };
      labels?: Record<string, string>;
    };
    const event = await until("audit event for the pod create", 45_000, async () => {
      if (!existsSync(cluster.auditLog)) return undefined;
      const events = readFrom(cluster.auditLog, from)
        .split("\n")
        .filter((line) => line.endsWith("}"))
        .map((line) => JSON.parse(line) as Event);
      return events.find(
        (e) => e.verb === "create" && e.objectRef?.name === name && e.objectRef.namespace === ns,
      );
    });
    expect(event.objectRef?.resource).toBe("pods");
    expect(event.labels?.app).toBe("audited");
  });

  it("runs a second cluster side by side on other ports, and down stops exactly its processes", async () => {
    const name = `side-${randomBytes(3).toString("hex")}`;
    const side = await up({ name, nodes: 1, pullDelayMs: 0, backoffDelayMs: 0, log: () => {} });
    try {
      const main = readState(cluster.name);
      expect(main).toBeDefined();
      const mainPorts = new Set([...Object.values(main!.ports), main!.hostPort]);
      for (const port of [...Object.values(side.ports), side.hostPort])
        expect(mainPorts.has(port)).toBe(false);
      expect(await isHealthy(side)).toBe(true);
    } finally {
      await down(name, () => {});
    }
    for (const p of side.processes) expect(isOurs(p.pid, side.dir)).toBe(false);
    expect(readState(name)).toBeUndefined();
    expect(await isHealthy(readState(cluster.name)!)).toBe(true);
  });
});

/** readFrom reads a file from a byte offset to its current end. */
function readFrom(path: string, offset: number): string {
  const length = statSync(path).size - offset;
  if (length <= 0) return "";
  const buf = Buffer.alloc(length);
  const fd = openSync(path, "r");
  try {
    readSync(fd, buf, 0, length, offset);
  } finally {
    closeSync(fd);
  }
  return buf.toString("utf8");
}
