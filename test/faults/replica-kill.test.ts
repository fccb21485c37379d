import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../integration/support/kube.ts";
import { type Answer, Churn } from "./support/churn.ts";
import type { HostProcess } from "./support/fault-cluster.ts";
import { expectSettled, type Replicas, startReplicas, troubles } from "./support/replicas.ts";

// One host of three is killed (SIGKILL: no drain, its requests cut mid-flight, its reconciler
// thread gone with it) while clients of all three create and release sandboxes, each retrying a
// failed request once on the next host. The other two serve on: callers see no failure beyond the
// requests that were under way on the dead host; every sandbox ever claimed (handed out, or lost
// with its answer on the dead host, then ended by its lifetime) is recorded exactly once in the
// shared PostgreSQL history; the pool returns to all-idle.

let r: Replicas;
// Each start takes 700 ms (kwok), so creates are under way on the host when it dies.
const POOL = { namespace: "faults", name: "kill3", size: 12, pullDelay: "700ms" };
const LIFETIME = 15;

beforeAll(async () => {
  r = await startReplicas(`faults-${process.pid}-kill3`, {}, POOL);
}, 240_000);
afterAll(async () => {
  await r?.close();
});

/** ok: a create that handed out a running sandbox, a release that released (or found it gone). */
const ok = (a: Answer) => (a.op === "create" ? a.status === 201 : a.status === 204 || a.status === 404);
const served = (a: Answer, host: HostProcess) =>
  a.op === "create" && a.status === 201 && a.host === host.base;

describe("one host of three is killed during churn", () => {
  it("callers retrying on another host see no failure beyond the dead host's requests; each sandbox is recorded once; the pool settles", async () => {
    const { c, hosts } = r;
    const churn = new Churn(
      c,
      `${POOL.namespace}/${POOL.name}`,
      6,
      LIFETIME,
      hosts.map((h) => h.base),
    );
    await until("creates served by every host", 30_000, async () =>
      hosts.every((h) => churn.outcomes.some((a) => served(a, h))),
    );
    const [, dead, alive] = hosts as [HostProcess, HostProcess, HostProcess];
    // Killed while a create of its own waits for its sandbox to run: claimed, not answered.
    await until("a create under way on the host for 300 ms", 30_000, async () =>
      [...churn.underway].some((a) => a.op === "create" && a.host === dead.base && Date.now() - a.at > 300),
    );
    const killedAt = Date.now();
    dead.child.kill("SIGKILL");
    expect(await dead.exited).toBe("SIGKILL");
    const after = churn.outcomes.length;
    await until(
      "30 creates served after the kill",
      60_000,
      async () =>
        churn.outcomes.slice(after).filter((a) => a.op === "create" && a.status === 201).length >= 30,
    );
    await churn.stop();
    // A request under way on the dead host when it died: the only kind that may have failed.
    const inFlightOnDead = (a: Answer) => a.host === dead.base && a.at <= killedAt && a.at + a.ms >= killedAt;
    console.error(
      `[kill] under way on the dead host when it died: ${
        churn.answers
          .filter(inFlightOnDead)
          .map((a) => `${a.op} ${a.status}`)
          .join(", ") || "none"
      }; ${churn.answers.filter((a) => a.retryOf).length} retries in all`,
    );

    expect(churn.outcomes.filter((a) => !ok(a) && !inFlightOnDead(a.retryOf ?? a))).toEqual([]);
    // The two others failed nothing, first tries and retries alike.
    expect(churn.answers.filter((a) => a.host !== dead.base && !ok(a))).toEqual([]);
    // The dead host was felt: requests sent to it went to another host instead.
    expect(
      churn.answers.filter((a) => a.retryOf?.host === dead.base && a.at > killedAt).length,
    ).toBeGreaterThan(0);
    // The survivors served on after the kill.
    expect(churn.outcomes.slice(after).some((a) => served(a, alive))).toBe(true);

    const claimed = await expectSettled(r, POOL, churn.handedOut);
    console.error(`[kill] ${claimed.size} sandboxes claimed, ${churn.handedOut.size} handed out`);
    // And the API (through the Service) answers the same records, each once.
    const ids = (await c.history(POOL.namespace)).map((x) => x.sandboxId);
    expect(ids.sort()).toEqual([...claimed].sort());
    for (const h of [hosts[0], alive]) expect(troubles(h)).toEqual([]);
  });
});
