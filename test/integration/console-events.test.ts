import { beforeAll, describe, expect, it } from "vitest";
import { loadConsole } from "../../functions/console/load-console.ts";
import { sandboxesView } from "../../lib/console/pages.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// The console's diagnostics (issue #23): a pooled pod keeps its name and uid from one sandbox to
// the next, so the Warning events it shows for a sandbox are its pod's since that sandbox's claim
// (GET /v1/sandboxes/{id}'s rule), read only for the sandboxes whose diagnosis the page shows.

const t = poolTest("console-events");
const { core } = kube();
const { deps, sent, app } = inProcessApi(t.deps);
const TEAM = "console-events";
let key = "";

const create = async () => {
  const res = await postCreate(app, key, { pool: `${t.ns}/p` });
  expect(res.status).toBe(201);
  return (await res.json()) as { sandboxId: string; pod: string };
};
const phases = async () =>
  new Map((await t.pods("p")).map((p) => [p.metadata?.name ?? "", phaseOf(p)] as const));
async function warn(pod: string, message: string, at: Date) {
  const [p] = (await t.pods("p")).filter((x) => x.metadata?.name === pod);
  await core.createNamespacedEvent({
    namespace: t.ns,
    body: {
      metadata: { name: `${pod}.${at.getTime().toString(16)}` },
      involvedObject: { kind: "Pod", apiVersion: "v1", namespace: t.ns, name: pod, uid: p?.metadata?.uid },
      type: "Warning",
      reason: "BackOff",
      message,
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      source: { component: "test" },
    },
  });
}

beforeAll(async () => {
  key = await tenantKey(deps, TEAM);
  await t.readyPool("p", 2);
});

describe("the console's Warning events", () => {
  it("show a reused pod's events since the shown sandbox's claim, read only for sandboxes it explains", async () => {
    // A and C run; A's pod has a Warning event while it serves A.
    const a = await create();
    const c = await create();
    await reconcileUntil(t.deps, t.ns, "p", "A and C running", async () => {
      const now = await phases();
      return now.get(a.pod) === "running" && now.get(c.pod) === "running";
    });
    const duringA = new Date();
    await warn(a.pod, "event during A", duringA);

    // A ends; its pod returns idle and, in a later second than A's event, serves B.
    expect(
      (await app.request(`/v1/sandboxes/${a.sandboxId}`, { method: "DELETE", headers: { "x-api-key": key } }))
        .status,
    ).toBe(204);
    await reconcileUntil(
      t.deps,
      t.ns,
      "p",
      "A's pod idle again",
      async () => (await phases()).get(a.pod) === "idle",
    );
    await until(
      "a second later than A's event",
      5_000,
      async () => Math.floor(Date.now() / 1000) > Math.floor(duringA.getTime() / 1000),
    );
    const b = await create();
    expect(b.pod).toBe(a.pod);
    await warn(b.pod, "event during B", new Date());

    sent.length = 0;
    const d = await loadConsole(deps, { team: TEAM, user: "u" }, { limit: 20 });
    const html = String(await sandboxesView(d.sandboxes, d.warnings, new Date()));
    const row = (id: string) => html.split('<tr data-sandbox="').find((r) => r.startsWith(`${id}"`)) ?? "";
    expect(row(b.sandboxId)).toContain("event during B");
    expect(row(b.sandboxId)).not.toContain("event during A");
    expect(row(c.sandboxId)).not.toContain("BackOff");

    // One read of events: B's pod's (B is starting, so it has a diagnosis; C runs, so it has none).
    const eventReads = sent.filter((r) => r.method === "GET" && r.path.endsWith("/events"));
    expect(eventReads.map((r) => r.query?.fieldSelector)).toEqual([
      `involvedObject.name=${b.pod},type=Warning`,
    ]);
    expect(d.sandboxes.find((s) => s.sandboxId === b.sandboxId)?.phase).toBe("starting");
  });
});
