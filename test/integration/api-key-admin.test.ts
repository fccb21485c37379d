import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_MISS_GAP_MS, KEY_READ_SHARE_MS } from "../../functions/api/authenticate.ts";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { revokeApiKey } from "../../functions/api/manage-api-keys.ts";
import { hashApiKey, KEY_ID_LENGTH } from "../../lib/claims/api-keys.ts";
import { PacedRead } from "../../lib/util/paced-read.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import { httpsRequest } from "./support/http.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { testDeps } from "./support/steps.ts";

// Operators list and revoke API keys with the CLI; a revoked key stops working within seconds.

const { core, cluster } = kube();
const base = testDeps();
const apiKeys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
const deps = { kube: base.kube, apiKeys, now: () => new Date() };
const team = `keys-${Date.now().toString(36)}`;
const cli = (...args: string[]) =>
  execFileSync(
    process.execPath,
    ["bin/agentbox.ts", "api-key", ...args, "--kubeconfig", cluster.kubeconfig],
    {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
const status = async (key: string) =>
  (
    await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/v1/sandboxes`, cluster.caCert, {
      headers: { "x-api-key": key },
    })
  ).status;

beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: apiKeys.namespace } } }).catch(() => {});
});
afterAll(() => base.history.close());

describe("api-key list and revoke", () => {
  it("lists keys by ID and tenant only, and a revoked key authenticates nobody within seconds", async () => {
    const first = await createApiKey(deps, { team, user: "ann" });
    const second = await createApiKey(deps, { team, user: "bob" });
    const id = (await hashApiKey(first)).slice(0, KEY_ID_LENGTH);
    expect(await status(first)).toBe(200);
    const listed = cli("list");
    expect(listed).toMatch(new RegExp(`^${id}\\t${team}\\tann\\tfalse\\t\\d{4}-`, "m"));
    expect(listed).toContain(`\t${team}\tbob\t`);
    expect(listed).not.toContain(first);
    expect(listed).not.toContain(await hashApiKey(first));
    expect(cli("revoke", id).trim()).toBe(`revoked ${id}`);
    await until("the revoked key refused", 5_000, async () => (await status(first)) === 401);
    expect(await status(second)).toBe(200);
    // By the key itself, too; and a key that is not there is an error naming it.
    expect(await revokeApiKey(deps, second)).toEqual({
      ok: true,
      id: (await hashApiKey(second)).slice(0, KEY_ID_LENGTH),
    });
    await until("the second key refused", 5_000, async () => (await status(second)) === 401);
    expect(await revokeApiKey(deps, second)).toMatchObject({ ok: false, reason: "not-found" });
    expect(() => cli("revoke", "zz-not-hex")).toThrow(/neither a key .* nor a key ID/);
  });
});

describe("bad keys", () => {
  it("a flood of distinct bad keys costs a paced few reads of the keys Secret; a key made just now still works at once", async () => {
    // The /v1 routes in this process with the host's shared and paced reads, over a transport that
    // records each request it sends to the real apiserver (inProcessApi's `sent`).
    const { sent, app } = inProcessApi(base, {
      keyReads: new PacedRead(KEY_MISS_GAP_MS, () => Date.now()),
      keyCacheReads: new SharedRead(KEY_READ_SHARE_MS, () => Date.now()),
    });
    const list = (key: string) => app.request("/v1/sandboxes", { headers: { "x-api-key": key } });
    await createApiKey(deps, { team, user: "cat" }); // the Secret exists
    const secret = `/api/v1/namespaces/${apiKeys.namespace}/secrets/${apiKeys.name}`;
    sent.length = 0;
    const started = Date.now();
    for (let wave = 0; wave < 4; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          list(`abx_bad-${wave}-${i}-${Math.random().toString(36).slice(2)}`),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 401));
    }
    const elapsed = Date.now() - started;
    const reads = sent.filter((r) => r.method === "GET" && r.path === secret).length;
    // 200 bad keys: the shared watch-cache read once a second, the paced etcd read once a gap.
    const bound = 2 + Math.ceil(elapsed / KEY_READ_SHARE_MS) + 2 + Math.ceil(elapsed / KEY_MISS_GAP_MS);
    expect(reads).toBeLessThanOrEqual(bound);
    expect(reads).toBeLessThan(40);
    // A key made after every read above authenticates its very first request.
    const fresh = await createApiKey(deps, { team, user: "dan" });
    expect((await list(fresh)).status).toBe(200);
  });
});
