import type { V1Pod, V1PodTemplate } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Change, Informer, type InformerSource } from "../../functions/cache/informer.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";
import type { Log } from "../../lib/util/log.ts";
import { kube, newNamespace, until } from "./support/kube.ts";

// The Informer (functions/cache/informer.ts) against a real apiserver: it lists, follows adds,
// changes and deletes, tells when it has passed a write, starts over from a list when the
// apiserver cannot go on from its version (410 Gone), lists again when asked, hands a late
// subscriber what it holds, and closes itself when told it is no longer used.

const { core, kc } = kube();
const client = new KubeClient(nodeKubeTransport(kc));
const watch = nodeKubeWatch(kc);
const warnings: string[] = [];
const log: Log = { debug() {}, info() {}, warn: (_o, m) => warnings.push(m ?? ""), error() {} };
const LABEL = "informer.test/app";
let ns = "";
let cleanup = async () => {};
const informers: Informer<V1Pod>[] = [];

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "informer"));
});
afterAll(async () => {
  for (const i of informers) i.close();
  await cleanup();
});

const source = (name: string, value?: string): InformerSource<V1Pod> => ({
  name,
  path: `/api/v1/namespaces/${ns}/pods`,
  selector: { labelSelector: value ? `${LABEL}=${value}` : LABEL },
  list: (page) => client.listPods(ns, value ? `${LABEL}=${value}` : LABEL, page),
});

/** pod writes a bare pod with the test's label (kwok's node never runs it: no node is asked for). */
const pod = async (name: string, value: string) =>
  (
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name, labels: { [LABEL]: value } },
        spec: { containers: [{ name: "c", image: "example.invalid/none:1" }], nodeName: "nowhere" },
      },
    })
  ).metadata?.resourceVersion ?? "";

const names = (pods: readonly { metadata?: { name?: string } }[] | undefined) =>
  (pods ?? []).map((p) => p.metadata?.name ?? "").sort();

/** compactEtcd compacts the cluster's etcd at its current revision: older versions are gone. */
async function compactEtcd(): Promise<void> {
  const { cluster } = kube();
  const post = (path: string, body: object) =>
    fetch(`${cluster.etcdUrl}${path}`, {
      method: "POST",
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
  const range = (await (await post("/v3/kv/range", { key: "AA==" })).json()) as {
    header: { revision: string };
  };
  const compacted = await post("/v3/kv/compaction", { revision: range.header.revision, physical: true });
  expect(compacted.status).toBe(200);
}

/** Heard records what one subscriber was told, in order. */
function recorder() {
  const heard: string[] = [];
  return {
    heard,
    subscriber: {
      listed: (objects: readonly V1Pod[]) => {
        heard.push(`listed ${names(objects).join(",")}`);
      },
      changed: (c: Change<V1Pod>) => {
        heard.push(`${c.deleted ? "deleted" : "changed"} ${c.name}`);
      },
      outOfStep: (why: string) => {
        heard.push(`out of step: ${why}`);
      },
    },
  };
}

describe("Informer", () => {
  it("lists, follows adds, changes and deletes, and counts what it did", async () => {
    await pod("a1", "a");
    const metrics = createMetrics(new Registry());
    const informer = new Informer<V1Pod>({ watch, log, metrics }, source("a", "a"));
    informers.push(informer);
    const r = recorder();
    informer.subscribe(r.subscriber);
    await informer.firstSync;
    await until("the first list held", 10_000, async () => names(informer.held()).join() === "a1");

    const version = await pod("a2", "a");
    await core.patchNamespacedPod({
      name: "a1",
      namespace: ns,
      body: [{ op: "add", path: "/metadata/annotations", value: { touched: "yes" } }],
    });
    await core.deleteNamespacedPod({ name: "a1", namespace: ns, gracePeriodSeconds: 0 });
    expect(await informer.caughtUp(version, 10_000)).toBe(true);
    await until("a1 gone from the informer", 10_000, async () => names(informer.held()).join() === "a2");
    expect(r.heard[0]).toBe("listed a1");
    expect(r.heard).toContain("changed a2");
    expect(r.heard.indexOf("deleted a1")).toBeGreaterThan(r.heard.indexOf("changed a1"));
    expect(informer.synced).toBe(true);

    const lists = await metrics.informers.lists.get();
    expect(lists.values).toContainEqual(
      expect.objectContaining({ labels: { informer: "a", cause: "start" }, value: 1 }),
    );
    const events = await metrics.informers.events.get();
    const deleted = events.values.find((v) => v.labels.type === "DELETED");
    expect(deleted?.value).toBe(1);
  }, 60_000);

  it("says when it has not heard a version: false at its deadline, at once for one that cannot be ordered", async () => {
    const informer = new Informer<V1Pod>({ watch, log }, source("b", "b"));
    informers.push(informer);
    await informer.firstSync;
    const ahead = String(BigInt(informer.version ?? "0") + 10_000_000n);
    const started = Date.now();
    expect(await informer.caughtUp(ahead, 300)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await informer.caughtUp("not-a-version", 10_000)).toBe(false);
    expect(await informer.caughtUp(informer.version ?? "", 10)).toBe(true);
  }, 60_000);

  it("starts over from a list when the apiserver cannot go on from its version (410 Gone)", async () => {
    // PodTemplates are served from etcd (the cluster turns their watch cache off): once etcd is
    // compacted past a version, a watch from it gets 410 Gone, as any watch does after an outage.
    const template = async (name: string) =>
      (
        await core.createNamespacedPodTemplate({
          namespace: ns,
          body: {
            metadata: { name, labels: { [LABEL]: "c" } },
            template: { spec: { containers: [{ name: "c", image: "x" }] } },
          },
        })
      ).metadata?.resourceVersion ?? "";
    // A watch from `first` needs the versions after it: c2's is one, and compaction at c3's or
    // later removes it.
    const first = await template("c1");
    await template("c2");
    await template("c3");
    await compactEtcd();
    const metrics = createMetrics(new Registry());
    const informer = new Informer<V1PodTemplate>(
      { watch, log, metrics },
      {
        name: "c",
        path: `/api/v1/namespaces/${ns}/podtemplates`,
        selector: { labelSelector: `${LABEL}=c` },
        list: async (page) => {
          const list = await core.listNamespacedPodTemplate({
            namespace: ns,
            labelSelector: `${LABEL}=c`,
            limit: page.limit,
            ...(page.continue ? { _continue: page.continue } : {}),
          });
          return {
            items: list.items,
            resourceVersion: list.metadata?.resourceVersion ?? "",
            ...(list.metadata?._continue ? { continue: list.metadata._continue } : {}),
          };
        },
      },
      { from: first },
    );
    informers.push(informer as unknown as Informer<V1Pod>);
    const heard: string[] = [];
    informer.subscribe({
      listed: (objects) => {
        heard.push(`listed ${names(objects).join(",")}`);
      },
      changed: (c) => {
        heard.push(`changed ${c.name}`);
      },
      outOfStep: (why) => {
        heard.push(`out of step: ${why}`);
      },
    });
    await until("the informer listed after the 410", 15_000, async () => heard.includes("listed c1,c2,c3"));
    expect(heard.slice(0, 2)).toEqual(["out of step: gone", "listed c1,c2,c3"]);
    expect(informer.synced).toBe(true);
    const lists = await metrics.informers.lists.get();
    expect(lists.values).toContainEqual(
      expect.objectContaining({ labels: { informer: "c", cause: "gone" }, value: 1 }),
    );
    const watches = await metrics.informers.watches.get();
    expect(watches.values).toContainEqual(
      expect.objectContaining({ labels: { informer: "c", end: "gone" }, value: 1 }),
    );
    await template("c4");
    await until("c4 followed after starting over", 10_000, async () => heard.includes("changed c4"));
  }, 60_000);

  it("lists again when asked, and hands a late subscriber what it holds", async () => {
    await pod("d1", "d");
    const informer = new Informer<V1Pod>({ watch, log }, source("d", "d"));
    informers.push(informer);
    await informer.firstSync;
    await until("d1 held", 10_000, async () => names(informer.held()).join() === "d1");
    const late = recorder();
    informer.subscribe(late.subscriber);
    expect(late.heard).toEqual(["listed d1"]);

    informer.relist("the test asks");
    expect(informer.synced).toBe(false);
    expect(informer.held()).toBeUndefined();
    // The watch stops at its next event (a new pod) and the informer lists again.
    await pod("d2", "d");
    await until("a second list", 15_000, async () => late.heard.includes("listed d1,d2"));
    expect(informer.synced).toBe(true);
    expect(warnings).toContain("informer lists again");
  }, 60_000);

  it("closes itself when reopen says it is no longer used", async () => {
    let used = true;
    const informer = new Informer<V1Pod>(
      { watch, log },
      { ...source("e", "e"), timeoutSeconds: 1 },
      { reopen: () => used },
    );
    informers.push(informer);
    await informer.firstSync;
    expect(informer.closed).toBe(false);
    used = false;
    await until("the informer closed after its watch ended", 10_000, async () => informer.closed);
    expect(informer.synced).toBe(false);
  }, 60_000);
});
