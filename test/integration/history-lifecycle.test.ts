import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { openSqlite, type SqliteStores } from "../../hosts/node/sqlite-usage.ts";
import { clusterDir } from "../../infra/cluster/state.ts";
import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";
import { lifecycle, record } from "../history/records.ts";
import { runCli } from "./support/cli.ts";
import { httpsRequest } from "./support/http.ts";
import { kube } from "./support/kube.ts";
import { testDeps } from "./support/steps.ts";
import { API_KEYS } from "./support/tenant-pool.ts";

// One sandbox's history through the test host's native API (GET /v1/history/{id}) and the CLI:
// its record and its lifecycle events, put here into the host's own SQLite file (as the pause and
// resume steps put them), read back with API keys from the real apiserver's key Secret: the
// owner and an admin see them, another tenant gets the 404 of a sandbox that never was.

const { core, cluster } = kube();
const base = `https://127.0.0.1:${cluster.hostPort}/v1`;
const suffix = randomBytes(3).toString("hex");
const team = `lifecycle-${suffix}`;
const user = `u-${suffix}`;
const deps = testDeps();
const key: Record<"owner" | "sameTeam" | "otherTeam" | "admin", string> = {
  owner: "",
  sameTeam: "",
  otherTeam: "",
  admin: "",
};
let stores: SqliteStores;

beforeAll(async () => {
  // The test host's history lives in this file (global-setup.ts: historyPath).
  stores = openSqlite(join(clusterDir(cluster.name), "test-history.sqlite"));
  await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
  const mint = (t: string, u: string, admin = false) =>
    createApiKey(
      { kube: deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: t, user: u, ...(admin ? { admin } : {}) },
    );
  key.owner = await mint(team, user);
  key.sameTeam = await mint(team, `other-${suffix}`);
  key.otherTeam = await mint(`other-${suffix}`, user);
  key.admin = await mint(`ops-${suffix}`, "root", true);
});
afterAll(() => {
  stores?.close();
  deps.history.close();
});

/** get reads `/v1/history/<path>` with a key (none: no header). */
async function get(path: string, who?: keyof typeof key) {
  const res = await httpsRequest(`${base}/history/${path}`, cluster.caCert, {
    timeoutMs: 30_000,
    headers: who ? { "x-api-key": key[who] } : {},
  });
  return { status: res.status, body: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {} };
}

/** owned are the fields that make an event or a record this file's owner's. */
const owned = { team, user, namespace: "audit-lifecycle", poolName: "p" };

describe("GET /v1/history/{id}", () => {
  it("answers a paused and resumed sandbox's events oldest first, then its record, to its owner and an admin only", async () => {
    const id = newSandboxId();
    const events: LifecycleEvent[] = [
      lifecycle(id, "paused", 1, owned),
      lifecycle(id, "resumed", 1, owned),
      lifecycle(id, "paused", 2, owned),
    ];
    for (const e of [...events].reverse()) expect(await stores.history.putEvent(e)).toBe("inserted");
    // Written again, as a step that crashed after its put writes it: kept once.
    expect(await stores.history.putEvent(events[0] as LifecycleEvent)).toBe("exists");

    // Paused, not ended: events, no record.
    const paused = await get(id, "owner");
    expect(paused).toEqual({ status: 200, body: { sandboxId: id, events } });
    expect(await get(id, "admin")).toEqual(paused);

    // Another tenant, of another team or of the same team: exactly the 404 of an id never seen.
    const never = newSandboxId();
    const unknown = await get(never, "owner");
    expect(unknown).toEqual({
      status: 404,
      body: { error: { code: "NotFound", message: `no sandbox "${never}"` } },
    });
    for (const who of ["otherTeam", "sameTeam"] as const) {
      const res = await get(id, who);
      expect({ who, res }).toEqual({
        who,
        res: { status: 404, body: { error: { code: "NotFound", message: `no sandbox "${id}"` } } },
      });
    }

    // Ended: its record beside its events.
    const ended: SandboxRecord = record(1, { sandboxId: id, ...owned, stopReason: "Released" });
    expect(await stores.history.put(ended)).toBe("inserted");
    expect(await get(id, "owner")).toEqual({ status: 200, body: { sandboxId: id, record: ended, events } });
    expect((await get(id, "otherTeam")).status).toBe(404);
    expect((await get(id, "admin")).body).toEqual({ sandboxId: id, record: ended, events });
  });

  it("answers a sandbox that ended without a pause: its record and no events; another tenant's record is a 404", async () => {
    const mine = newSandboxId();
    const theirs = newSandboxId();
    await stores.history.put(record(2, { sandboxId: mine, ...owned }));
    await stores.history.put(record(3, { sandboxId: theirs, ...owned, team: `other-${suffix}` }));
    expect(await get(mine, "owner")).toEqual({
      status: 200,
      body: { sandboxId: mine, record: record(2, { sandboxId: mine, ...owned }), events: [] },
    });
    expect((await get(theirs, "owner")).status).toBe(404);
    expect((await get(theirs, "otherTeam")).status).toBe(200);
  });

  it("refuses an id that cannot name a sandbox (400 naming id) and a caller without a key (401)", async () => {
    const bad = await get("bad!id", "owner");
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: "BadRequest", fields: [{ path: "id", message: expect.stringContaining("sandbox id") }] },
    });
    expect((await get("a".repeat(64), "owner")).status).toBe(400);
    expect((await get(newSandboxId())).status).toBe(401);
  });
});

describe("agentbox history <id>", () => {
  it("prints the record and the pauses and resumes, or the API's 404", async () => {
    const id = newSandboxId();
    await stores.history.putEvent(lifecycle(id, "paused", 1, { ...owned, podName: "p-abc", bytes: 4096 }));
    await stores.history.putEvent(lifecycle(id, "resumed", 1, { ...owned, podName: "p-def" }));
    const cli = (who: keyof typeof key) =>
      runCli(["history", id, "--cluster", cluster.name], { ...process.env, AGENTBOX_KEY: key[who] });
    const shown = await cli("owner");
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`${id}: not ended`);
    expect(lines[2]).toMatch(/^EVENT\s+N\s+AT\s+AGO\s+POD\s+BYTES$/);
    expect(lines[3]).toMatch(/^paused\s+1\s+2026-11-21T10:01:00Z\s+\d+[smhd]\s+p-abc\s+4096$/);
    expect(lines[4]).toMatch(/^resumed\s+1\s+2026-11-21T10:02:00Z\s+\d+[smhd]\s+p-def\s+-$/);
    const refused = await cli("otherTeam");
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toContain(`error: no sandbox "${id}" (404 NotFound)`);
  }, 120_000);
});
