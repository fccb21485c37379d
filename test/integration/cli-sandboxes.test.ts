import { describe, expect, it } from "vitest";
import { runCli } from "./support/cli.ts";
import { kube, until } from "./support/kube.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// The CLI's sandbox commands against the test host's /v1 API, as a user runs them: with an API
// key and the local cluster's name (its host and CA), in tables or JSON.

const { cluster } = kube();
const t = tenantPool("cli", "cli");
const cli = (...args: string[]) =>
  runCli([...args, "--cluster", cluster.name], { ...process.env, AGENTBOX_KEY: t.key });

describe("agentbox get|create|pause|resume|delete|history", () => {
  it("lists the pools it may use, creates and waits, lists, pauses, resumes, deletes, and finds the record", async () => {
    const pools = await until("the pool listed with its idle pod", 60_000, async () => {
      const { code, stdout } = await cli("get", "pools", "-o", "json");
      const list = code === 0 ? (JSON.parse(stdout) as { pool: string; idle: number }[]) : [];
      return list.find((p) => p.pool === `${t.ns}/p` && p.idle === 1);
    });
    expect(pools).toMatchObject({ pool: `${t.ns}/p`, desired: 1 });
    const table = await cli("get", "pools");
    expect(table.stdout.split("\n")[0]).toMatch(
      /^POOL\s+PHASE\s+DESIRED\s+IDLE\s+STARTING\s+RUNNING\s+STOPPING\s+FAILED\s+TEMPLATE$/,
    );
    expect(table.stdout).toMatch(new RegExp(`^${t.ns}/p\\s+\\w+\\s+1\\s+1\\s`, "m"));

    const created = await cli(
      "create",
      "--pool",
      `${t.ns}/p`,
      "--wait",
      "--wait-timeout",
      "30",
      "-o",
      "json",
    );
    expect(created.code, created.stderr).toBe(0);
    const sandbox = JSON.parse(created.stdout) as { sandboxId: string; phase: string };
    expect(sandbox.phase).toBe("running");
    const listed = await cli("get", "sandboxes");
    expect(listed.stdout).toMatch(new RegExp(`^${sandbox.sandboxId}\\s+${t.ns}/p\\s+running\\s`, "m"));

    // Paused: its pod back in the pool, the sandbox shown paused; resumed: running again, same id.
    const paused = await cli("pause", sandbox.sandboxId);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(new RegExp(`^${sandbox.sandboxId}\\s+${t.ns}/p\\s+paused\\s`, "m"));
    const resumed = await cli("resume", sandbox.sandboxId, "--timeout", "600", "-o", "json");
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ sandboxId: sandbox.sandboxId, phase: "running" });
    const deleted = await cli("delete", sandbox.sandboxId);
    expect(deleted).toMatchObject({ code: 0, stdout: `released ${sandbox.sandboxId}\n` });
    await until("the record in the CLI's history", 60_000, async () => {
      const { stdout } = await cli("history", "--namespace", t.ns);
      return new RegExp(`^${sandbox.sandboxId}\\s+${t.ns}/p\\s+Released\\s`, "m").test(stdout);
    });
  }, 180_000);

  it("prints the API's errors with their choices, and says what is missing", async () => {
    const unknown = await cli("create", "--pool", `${t.ns}/nope`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(`error: no pool "${t.ns}/nope" for you (404 NotFound)`);
    expect(unknown.stderr).toMatch(new RegExp(`choices: .*${t.ns}/p`));
    const noKey = await runCli(["get", "pools", "--cluster", cluster.name], {
      ...process.env,
      AGENTBOX_KEY: "",
    });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("no API key");
    const badOutput = await cli("get", "pools", "-o", "yaml");
    expect(badOutput).toMatchObject({ code: 2, stderr: "error: -o yaml: choose table or json\n" });
  });
});
