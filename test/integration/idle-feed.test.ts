import { beforeAll, describe, expect, it } from "vitest";
import { IdleFeed } from "../../functions/cache/idle-feed.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { NextReads } from "../../lib/util/shared-read.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { poolTest } from "./support/steps.ts";

// Creates against the create route running in this process, with the host's feed of a pool's
// idle pods (ADR 0024), over a transport that records every request: once the feed has listed
// the pool, a burst claims without listing it, each pod goes to one create, and a create that
// finds the pool drained still gets its 503 only from a consistent list.

const t = poolTest("idle-feed");
const feed = new IdleFeed({ ...t.deps, watch: nodeKubeWatch(kube().kc) });
const { deps, sent, app } = inProcessApi(t.deps, {
  idleFeed: feed,
  freshLooks: new NextReads(() => Date.now()),
});
const N = 30;
let key = "";

const create = () => postCreate(app, key, { pool: `${t.ns}/p` });
const podLists = () => sent.filter((r) => r.method === "GET" && r.path === `/api/v1/namespaces/${t.ns}/pods`);

beforeAll(async () => {
  key = await tenantKey(deps, "idle-feed-test");
  await t.readyPool("p", N);
});

describe("creates take candidates from the host's feed of a pool's idle pods", () => {
  it("claims a burst without listing the pool, each pod once, and answers 503 only after a consistent list", async () => {
    expect((await create()).status).toBe(201); // the first create opens the feed (and lists)
    await until("the feed listed the pool", 30_000, async () => feed.ready(t.ns, "p"));
    sent.length = 0;
    const answers = await Promise.all(Array.from({ length: N - 1 }, create));
    expect(answers.map((a) => a.status)).toEqual(Array(N - 1).fill(201));
    const pods = await Promise.all(answers.map(async (a) => ((await a.json()) as { pod: string }).pod));
    expect(new Set(pods).size).toBe(N - 1);
    expect(podLists()).toEqual([]);
    // Drained: the feed has nothing to give; the 503 comes from a list that is not the cache's.
    const drained = await create();
    expect(drained.status).toBe(503);
    expect(podLists().some((r) => r.query?.resourceVersion === undefined)).toBe(true);
    feed.close();
  }, 120_000);
});
