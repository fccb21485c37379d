import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
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

  it("delivers audit events for pod writes to the host URL with the callback token", async () => {
    const received: { auth?: string; body: string }[] = [];
    const server = createServer(
      { cert: readFileSync(cluster.webhookCert), key: readFileSync(cluster.webhookKey) },
      (req, res) => {
        let body = "";
        req.on("data", (c: Buffer) => {
          body += c.toString("utf8");
        });
        req.on("end", () => {
          received.push({ auth: req.headers.authorization, body });
          res.writeHead(200).end();
        });
      },
    );
    await new Promise<void>((r) => server.listen(cluster.hostPort, "127.0.0.1", r));
    try {
      const name = `audited-${randomBytes(3).toString("hex")}`;
      await core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name, labels: { app: "audited" } },
          spec: { containers: [{ name: "main", image: "registry.local/x:1" }] },
        },
      });
      const hit = await until("audit event for the pod create", 45_000, async () =>
        received.find((r) => r.body.includes(`"name":"${name}"`) && r.body.includes('"verb":"create"')),
      );
      expect(hit.auth).toBe(`Bearer ${cluster.callbackToken}`);
      const list = JSON.parse(hit.body) as {
        kind: string;
        items: {
          objectRef: { resource: string; namespace: string };
          responseObject?: { metadata?: { labels?: Record<string, string> } };
        }[];
      };
      expect(list.kind).toBe("EventList");
      const event = list.items.find((e) => e.objectRef.resource === "pods" && e.objectRef.namespace === ns);
      expect(event?.responseObject?.metadata?.labels?.app).toBe("audited");
    } finally {
      await new Promise((r) => server.close(r));
    }
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
