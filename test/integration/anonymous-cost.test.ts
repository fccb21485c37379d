import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_MISS_GAP_MS } from "../../functions/api/authenticate.ts";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";
import { PacedRead } from "../../lib/util/paced-read.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import { inProcessApi, postCreate } from "./support/in-process-api.ts";
import { kube, newNamespace } from "./support/kube.ts";
import { POOLS, poolObject, testDeps } from "./support/steps.ts";

// What an anonymous create costs the apiserver, counted on the wire of the real one: the sandbox
// routes run in this process over a transport that records every request.

const { core, custom } = kube();
let keyClock = 0;
const base = testDeps();
const { deps, sent, app } = inProcessApi(base, {
  keyReads: new PacedRead(KEY_MISS_GAP_MS, () => Date.now()),
  // Its clock stands still unless a test moves it: sharing does not hang on how fast creates run.
  keyCacheReads: new SharedRead(1000, () => keyClock),
});
let ns = "";
let cleanup = async () => {};
let key = "";

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "anon"));
  await core.createNamespace({ body: { metadata: { name: deps.apiKeys.namespace } } }).catch(() => {});
  key = await createApiKey(deps, { team: "anon-test", user: "u" });
  await custom.createNamespacedCustomObject({ ...POOLS, namespace: ns, body: poolObject(ns, "p", 0) });
});
afterAll(async () => {
  await cleanup();
  base.history.close();
});

const create = (apiKey: string) =>
  app.request("/v1/sandboxes", {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify({ pool: `${ns}/p` }),
  });
const quorum = (r: KubeRequest) => r.method === "GET" && r.query?.resourceVersion === undefined;

/** lists are the collection reads (pods, pools, Envs, templates) among the requests sent. */
const lists = (requests: readonly KubeRequest[]) =>
  requests
    .filter((r) => /\/(pods|sandboxpools|sandboxenvs|sandboxtemplates)$/.test(r.path))
    .map((r) => r.path);

describe("an anonymous create", () => {
  // Each kind of target: what an anonymous create names must cost the same, whatever it is.
  const targets: [string, () => Record<string, string>][] = [
    ["pool", () => ({ pool: `${ns}/p` })],
    ["Env", () => ({ env: `${ns}/e` })],
    ["template", () => ({ template: "anon-t" })],
  ];
  it.each(targets)(
    "naming a %s costs no list and no quorum read per request, and is a 401",
    async (_, target) => {
      sent.length = 0;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => postCreate(app, `abx_unknown-${i}`, target())),
      );
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 401));
      expect(lists(sent)).toEqual([]);
      // The keys Secret from etcd at most twice for all twenty (paced: one read under way, the
      // next shared by every later miss), and nothing else from etcd.
      const secret = `/api/v1/namespaces/${deps.apiKeys.namespace}/secrets/${deps.apiKeys.name}`;
      const reads = sent.filter(quorum).map((r) => r.path);
      expect(reads.length).toBeLessThanOrEqual(2);
      expect(reads.filter((p) => p !== secret)).toEqual([]);
    },
  );

  it("naming a pool that does not exist, reads nothing from etcd either", async () => {
    sent.length = 0;
    const missing = await app.request("/v1/sandboxes", {
      method: "POST",
      headers: { "x-api-key": "abx_unknown-missing", "content-type": "application/json" },
      body: JSON.stringify({ pool: `${ns}/missing` }),
    });
    expect(missing.status).toBe(401);
    expect(
      sent.filter((r) => r.path.includes("/sandboxpools/missing")).map((r) => r.query?.resourceVersion),
    ).toEqual(["0"]);
  });

  it("while a known key's create still lists its candidates", async () => {
    sent.length = 0;
    const answer = await create(key);
    expect(answer.status).toBe(503); // the pool has no pods
    expect(sent.some((r) => r.method === "GET" && r.path === `/api/v1/namespaces/${ns}/pods`)).toBe(true);
  });

  it("and a known key's template create still lists the pools and Envs", async () => {
    sent.length = 0;
    expect((await postCreate(app, key, { template: "anon-t" })).status).toBe(404); // no such template
    expect(lists(sent)).toEqual(
      expect.arrayContaining([
        "/apis/agents.navix.sh/v1alpha1/sandboxpools",
        "/apis/agents.navix.sh/v1alpha1/sandboxenvs",
      ]),
    );
  });
});

describe("known keys", () => {
  const secretReads = () =>
    sent.filter((r) => r.method === "GET" && r.path.endsWith(`/secrets/${deps.apiKeys.name}`)).length;

  it("share one read of the keys Secret among a host's creates of a second", async () => {
    keyClock += 1000;
    await create(key); // a shared read starts now
    sent.length = 0;
    const answers = await Promise.all(Array.from({ length: 20 }, () => create(key)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 503)); // known, and the pool has no pods
    expect(secretReads()).toBe(0);
  });

  it("and a key made after that read still works at once", async () => {
    keyClock += 1000;
    await create(key);
    const fresh = await createApiKey(deps, { team: "anon-test", user: "v" });
    sent.length = 0;
    expect((await create(fresh)).status).toBe(503);
    expect(secretReads()).toBeGreaterThanOrEqual(1); // its own read: the shared one predates it
  });
});
