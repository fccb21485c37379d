import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PendingGauge } from "../../functions/api/pending-gauge.ts";
import { TeamHolds, teamSandboxes } from "../../functions/api/team-usage.ts";
import { IdleDispatch } from "../../functions/cache/idle-dispatch.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Team limits against creates that claim at once and creates that waited: the sandbox routes run
// in this process with the host's shared pieces (TeamHolds, IdleDispatch, PendingGauge), over the
// run's real apiserver; the test drives the pool steps itself.

const t = poolTest("team-limit");
const { kc } = kube();
const LIMIT = 2;

/** WaitCounting is the host's IdleDispatch, counting the creates that started to wait. */
class WaitCounting extends IdleDispatch {
  waits = 0;
  override wait<T>(...args: Parameters<IdleDispatch["wait"]>): Promise<T | undefined> {
    this.waits++;
    return super.wait(...(args as [SandboxPool[], number, never, AbortSignal?]));
  }
}

/** DemandCounting is the host's PendingGauge, counting the waiting creates it counts as demand now. */
class DemandCounting extends PendingGauge {
  counted = 0;
  override enter(pool: SandboxPool): number {
    this.counted++;
    return super.enter(pool);
  }
  override leave(pool: SandboxPool): void {
    this.counted--;
    super.leave(pool);
  }
}

/** hostApi is one host's API with a limit of LIMIT for `team`. */
function hostApi(team: string) {
  const idle = new WaitCounting({ ...t.deps, random: Math.random, watch: nodeKubeWatch(kc) });
  const pending = new DemandCounting(t.deps, `team-limit-${randomBytes(3).toString("hex")}`);
  const api = inProcessApi(t.deps, {
    teamLimits: { teams: { [team]: LIMIT } },
    teamHolds: new TeamHolds(t.deps),
    idle,
    pending,
  });
  return { ...api, idle, pending };
}

const held = (team: string) => teamSandboxes(t.deps, team);
const errorOf = async (r: Response) =>
  ((await r.json()) as { error: { code: string; message: string } }).error;

describe("team limits", () => {
  it("creates that claim at once on one host never pass their team's limit", async () => {
    const team = `burst-${randomBytes(3).toString("hex")}`;
    const { app, deps } = hostApi(team);
    const key = await tenantKey(deps, team);
    await t.readyPool("burst", 8);
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => postCreate(app, key, { pool: `${t.ns}/burst` })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(LIMIT);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(8 - LIMIT);
    await until("the watch cache to show the claims", 10_000, async () => (await held(team)) === LIMIT);
    expect((await t.pods("burst")).filter((p) => phaseOf(p) !== "idle")).toHaveLength(LIMIT);
  }, 90_000);

  it("creates that waited are checked again when they claim: 429, the pods stay idle, and they are no demand past the limit", async () => {
    const team = `waiting-${randomBytes(3).toString("hex")}`;
    const { app, deps, idle, pending } = hostApi(team);
    const key = await tenantKey(deps, team);
    const N = 10;
    await t.createPool("later", 0);
    await t.readyPool("now", LIMIT);
    // N creates wait for the empty pool; the team holds nothing yet, so each passes its first check.
    const waiting = Array.from({ length: N }, () =>
      postCreate(app, key, { pool: `${t.ns}/later`, waitTimeout: 30 }),
    );
    await until(`${N} creates waiting`, 20_000, async () => idle.waits === N);
    // Only the team's limit's worth counts as demand: the pool grows for no more than it may hold.
    expect(pending.counted).toBe(LIMIT);
    await reconcileUntil(
      t.deps,
      t.ns,
      "later",
      `pendingRequests ${LIMIT}`,
      async () => (await t.getPool("later")).status?.pendingRequests === LIMIT,
    );
    // Meanwhile the team takes its limit's worth from another pool.
    for (let i = 0; i < LIMIT; i++)
      expect((await postCreate(app, key, { pool: `${t.ns}/now` })).status).toBe(201);
    // Pods turn idle in the pool the creates wait for: each is offered to them, and refused.
    await t.deps.kube.patchPool(t.ns, "later", [{ op: "replace", path: "/spec/replicas", value: 4 }]);
    await reconcileUntil(t.deps, t.ns, "later", "4 idle pods in later", async () => {
      const pods = await t.pods("later");
      return pods.length === 4 && pods.every((p) => phaseOf(p) === "idle" && isReady(p));
    });
    const answers = await Promise.all(waiting);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 429));
    expect(await errorOf(answers[0] as Response)).toEqual({
      code: "TooManySandboxes",
      message: `team "${team}" holds ${LIMIT} sandboxes, its limit is ${LIMIT} (the host's team sandbox limit); release one first`,
    });
    expect((await t.pods("later")).every((p) => phaseOf(p) === "idle")).toBe(true);
    expect(await held(team)).toBe(LIMIT);
    expect(pending.counted).toBe(0);
  }, 120_000);
});
