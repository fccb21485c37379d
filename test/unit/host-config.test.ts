import { mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readActivitySource } from "../../hosts/node/activity-settings.ts";
import { readHostEnv } from "../../hosts/node/config.ts";

const base = { AGENTBOX_TLS_CERT: "/tls/tls.crt", AGENTBOX_TLS_KEY: "/tls/tls.key" };
const token = (c: string) => c.repeat(24);
/** valid is the least environment `npm run serve` accepts. */
const valid = { ...base, AGENTBOX_CALLBACK_TOKEN: token("a"), AGENTBOX_ADMIN_TOKEN: token("b") };

describe("readHostEnv", () => {
  it("applies the defaults", () => {
    const r = readHostEnv(valid);
    expect(r).toEqual({
      ok: true,
      value: {
        callbackToken: token("a"),
        adminToken: token("b"),
        certFile: "/tls/tls.crt",
        keyFile: "/tls/tls.key",
        host: "0.0.0.0",
        port: 8443,
        historyPath: "/var/lib/agentbox/history.sqlite",
        tickSeconds: 10,
        tickConcurrency: 8,
        consoleSampleSeconds: 30,
        usageSampleSeconds: 10,
        snapshotRetentionSeconds: 604800,
        envdPort: 49983,
        adoptPools: false,
        instanceId: hostname(),
        idleRelease: "reported",
        instanceTypes: { namespace: "agentbox-system", name: "agentbox-instance-types" },
        logLevel: "info",
        kubeTimeouts: { read: 10_000, list: 30_000, write: 15_000 },
        shutdown: { settleMs: 5000, graceMs: 25_000 },
      },
    });
  });

  it("reads where the instance type catalog lives, naming a bad value", () => {
    const r = readHostEnv({ ...valid, AGENTBOX_INSTANCE_TYPES: "ops/types" });
    expect(r.ok && r.value.instanceTypes).toEqual({ namespace: "ops", name: "types" });
    const bad = readHostEnv({ ...valid, AGENTBOX_INSTANCE_TYPES: "types" });
    expect(bad.ok ? [] : bad.errors).toEqual([
      'AGENTBOX_INSTANCE_TYPES: must be "namespace/name" of a ConfigMap, e.g. agentbox-system/agentbox-instance-types',
    ]);
  });

  it("reads how often the console samples the pool gauges, naming a bad value", () => {
    const r = readHostEnv({ ...valid, AGENTBOX_CONSOLE_SAMPLE_SECONDS: "5" });
    expect(r.ok && r.value.consoleSampleSeconds).toBe(5);
    const bad = readHostEnv({ ...valid, AGENTBOX_CONSOLE_SAMPLE_SECONDS: "7200" });
    expect(bad.ok ? [] : bad.errors.join("\n")).toContain("AGENTBOX_CONSOLE_SAMPLE_SECONDS");
  });

  it("reads how often the sandboxes' use is sampled: whole seconds, 0 (never) or 1 to 3600", () => {
    for (const [value, seconds] of [
      ["0", 0],
      ["1", 1],
      ["3600", 3600],
    ] as const) {
      const r = readHostEnv({ ...valid, AGENTBOX_USAGE_SAMPLE_SECONDS: value });
      expect(r.ok && r.value.usageSampleSeconds, value).toBe(seconds);
    }
    for (const value of ["0.5", "2.5", "3601", "-1", "ten"]) {
      const bad = readHostEnv({ ...valid, AGENTBOX_USAGE_SAMPLE_SECONDS: value });
      expect(bad.ok ? [] : bad.errors, value).toEqual([
        expect.stringMatching(/^AGENTBOX_USAGE_SAMPLE_SECONDS: /),
      ]);
    }
  });

  it("reads the team sandbox limits and names a bad one", () => {
    const r = readHostEnv({
      ...valid,
      AGENTBOX_TEAM_SANDBOX_LIMIT: "20",
      AGENTBOX_TEAM_SANDBOX_LIMITS: "ml=50",
    });
    expect(r.ok && r.value.teamLimits).toEqual({ all: 20, teams: { ml: 50 } });
    const bad = readHostEnv({ ...valid, AGENTBOX_TEAM_SANDBOX_LIMITS: "ml" });
    expect(bad.ok ? [] : bad.errors).toEqual([
      'AGENTBOX_TEAM_SANDBOX_LIMIT(S): "ml" is not team=count (a team name, a whole number)',
    ]);
  });

  it("reads the apiserver request timeouts and names each bad one", () => {
    const r = readHostEnv({
      ...valid,
      AGENTBOX_KUBE_READ_TIMEOUT_SECONDS: "2.5",
      AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS: "60",
      AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS: "5",
    });
    expect(r.ok && r.value.kubeTimeouts).toEqual({ read: 2500, list: 60_000, write: 5000 });
    const bad = readHostEnv({
      ...valid,
      AGENTBOX_KUBE_READ_TIMEOUT_SECONDS: "0",
      AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS: "soon",
      AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS: "301",
    });
    expect(bad.ok ? [] : bad.errors.map((e) => e.split(":")[0])).toEqual([
      "AGENTBOX_KUBE_READ_TIMEOUT_SECONDS",
      "AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS",
      "AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS",
    ]);
  });

  it("reads the shutdown's settle and grace, and names each bad one", () => {
    const r = readHostEnv({
      ...valid,
      AGENTBOX_SHUTDOWN_SETTLE_SECONDS: "0",
      AGENTBOX_SHUTDOWN_GRACE_SECONDS: "2.5",
    });
    expect(r.ok && r.value.shutdown).toEqual({ settleMs: 0, graceMs: 2500 });
    const bad = readHostEnv({
      ...valid,
      AGENTBOX_SHUTDOWN_SETTLE_SECONDS: "61",
      AGENTBOX_SHUTDOWN_GRACE_SECONDS: "-1",
    });
    expect(bad.ok ? [] : bad.errors.map((e) => e.split(":")[0])).toEqual([
      "AGENTBOX_SHUTDOWN_SETTLE_SECONDS",
      "AGENTBOX_SHUTDOWN_GRACE_SECONDS",
    ]);
    const words = readHostEnv({ ...valid, AGENTBOX_SHUTDOWN_GRACE_SECONDS: "soon" });
    expect(words.ok ? [] : words.errors).toEqual(["AGENTBOX_SHUTDOWN_GRACE_SECONDS: must be a number"]);
  });

  it("reads the cluster ID, adoption and the idle-release mode, naming each bad value", () => {
    const r = readHostEnv({
      ...valid,
      AGENTBOX_CLUSTER_ID: "eu-west-1",
      AGENTBOX_ADOPT_POOLS: "true",
      AGENTBOX_IDLE_RELEASE: "since-start",
    });
    expect(r.ok && [r.value.clusterId, r.value.adoptPools, r.value.idleRelease]).toEqual([
      "eu-west-1",
      true,
      "since-start",
    ]);
    const pulled = readHostEnv({ ...valid, AGENTBOX_ACTIVITY_SOURCE_URL: "https://proxy.local/stats" });
    expect(pulled.ok && pulled.value.idleRelease).toBe("pulled");
    // The sandbox router is an activity source of its own: its traffic counts by default.
    const routed = readHostEnv({ ...valid, AGENTBOX_SANDBOX_DOMAIN: "sandbox.example.com" });
    expect(routed.ok && routed.value.idleRelease).toBe("pulled");
    const bad = readHostEnv({
      ...valid,
      AGENTBOX_CLUSTER_ID: "no spaces",
      AGENTBOX_ADOPT_POOLS: "yes",
      AGENTBOX_IDLE_RELEASE: "whenever",
    });
    expect(bad.ok ? [] : bad.errors.map((e) => e.split(":")[0])).toEqual([
      "AGENTBOX_CLUSTER_ID",
      "AGENTBOX_IDLE_RELEASE",
      "AGENTBOX_ADOPT_POOLS",
    ]);
    const pulledWithout = readHostEnv({ ...valid, AGENTBOX_IDLE_RELEASE: "pulled" });
    expect(pulledWithout.ok ? [] : pulledWithout.errors).toEqual([
      "AGENTBOX_IDLE_RELEASE: pulled needs a pulled activity source (AGENTBOX_ACTIVITY_SOURCE_URL, or the sandbox router: AGENTBOX_SANDBOX_DOMAIN or AGENTBOX_DATA_PLANE_PORT)",
    ]);
  });

  it("reads the instance ID (default: the hostname) and refuses one that is no lowercase label value", () => {
    const r = readHostEnv({ ...valid, AGENTBOX_INSTANCE_ID: "agentbox-functions-7d9f8-x2k4p" });
    expect(r.ok && r.value.instanceId).toBe("agentbox-functions-7d9f8-x2k4p");
    for (const bad of ["", "Host-A", "-a", "a-", "a b", "a/b", "a".repeat(64)]) {
      const refused = readHostEnv({ ...valid, AGENTBOX_INSTANCE_ID: bad });
      expect(refused.ok ? [] : refused.errors).toEqual([
        "AGENTBOX_INSTANCE_ID: must be 1 to 63 lowercase letters, digits, '-', '_' or '.', beginning and ending with a letter or digit (a label value such as a pod name)",
      ]);
    }
    expect(readHostEnv({ ...valid, AGENTBOX_INSTANCE_ID: "a".repeat(63) }).ok).toBe(true);
  });

  it("reads the sandbox domain, and refuses one that is no DNS name or is E2B's", () => {
    const r = readHostEnv({ ...valid, AGENTBOX_SANDBOX_DOMAIN: "Sandbox.Example.com" });
    expect(r.ok && r.value.sandboxDomain).toBe("sandbox.example.com");
    const unset = readHostEnv(valid);
    expect(unset.ok && "sandboxDomain" in unset.value).toBe(false);
    for (const [domain, why] of [
      ["https://sandbox.example.com", "without scheme, port or path"],
      ["sandbox..example.com", "is not a DNS label"],
      ["e2b.app", "not E2B's"],
      ["sandbox.e2b.dev", "not E2B's"],
    ]) {
      const bad = readHostEnv({ ...valid, AGENTBOX_SANDBOX_DOMAIN: domain });
      expect(bad.ok ? [] : bad.errors).toEqual([expect.stringMatching(/^AGENTBOX_SANDBOX_DOMAIN: must be/)]);
      expect(bad.ok ? "" : bad.errors[0]).toContain(why);
    }
  });

  it("runs the sandbox router with a sandbox domain or its port, on distinct ports", () => {
    const off = readHostEnv(valid);
    expect(off.ok && "dataPlane" in off.value).toBe(false);
    const byDomain = readHostEnv({ ...valid, AGENTBOX_SANDBOX_DOMAIN: "sandbox.example.com" });
    expect(byDomain.ok && byDomain.value.dataPlane).toEqual({ plainPort: 8080, tlsPort: 9443 });
    const set = readHostEnv({
      ...valid,
      AGENTBOX_DATA_PLANE_PORT: "8081",
      AGENTBOX_DATA_PLANE_TLS_PORT: "off",
      AGENTBOX_DATA_PLANE_HOST: "10.0.0.1",
      AGENTBOX_DATA_PLANE_NAMES: " Router.Example.com, router ",
      AGENTBOX_DATA_PLANE_NAMESPACE: "tenant-a",
    });
    expect(set.ok && set.value.dataPlane).toEqual({
      plainPort: 8081,
      host: "10.0.0.1",
      routerNames: ["router.example.com", "router"],
      namespace: "tenant-a",
    });
    const clash = readHostEnv({
      ...valid,
      AGENTBOX_DATA_PLANE_PORT: "8443",
      AGENTBOX_DATA_PLANE_TLS_PORT: "8443",
    });
    expect(clash.ok ? [] : clash.errors).toEqual([
      "AGENTBOX_DATA_PLANE_PORT: must differ from AGENTBOX_LISTEN_PORT",
      "AGENTBOX_DATA_PLANE_TLS_PORT: must differ from AGENTBOX_LISTEN_PORT and AGENTBOX_DATA_PLANE_PORT",
    ]);
    const bad = readHostEnv({
      ...valid,
      AGENTBOX_DATA_PLANE_TLS_PORT: "on",
      AGENTBOX_DATA_PLANE_NAMESPACE: "A_b",
    });
    expect(bad.ok ? [] : bad.errors.map((e) => e.split(":")[0])).toEqual([
      "AGENTBOX_DATA_PLANE_TLS_PORT",
      "AGENTBOX_DATA_PLANE_NAMESPACE",
    ]);
  });

  it("runs the router in a process of its own with its Node flags, or in a thread, naming a bad value", () => {
    const router = { ...valid, AGENTBOX_DATA_PLANE_PORT: "8081" };
    const byDefault = readHostEnv(router);
    expect(byDefault.ok && byDefault.value.dataPlane?.runsIn).toBeUndefined();
    const flags = readHostEnv({
      ...router,
      AGENTBOX_DATA_PLANE_NODE_FLAGS: " --max-semi-space-size=16  --no-incremental-marking",
    });
    expect(flags.ok && flags.value.dataPlane?.runsIn).toEqual({
      nodeFlags: ["--max-semi-space-size=16", "--no-incremental-marking"],
    });
    const none = readHostEnv({ ...router, AGENTBOX_DATA_PLANE_NODE_FLAGS: "" });
    expect(none.ok && none.value.dataPlane?.runsIn).toEqual({ nodeFlags: [] });
    const thread = readHostEnv({ ...router, AGENTBOX_DATA_PLANE_NODE_FLAGS: "thread" });
    expect(thread.ok && thread.value.dataPlane?.runsIn).toBe("thread");
    const bad = readHostEnv({ ...router, AGENTBOX_DATA_PLANE_NODE_FLAGS: "--ok /tmp/evil.js" });
    expect(bad.ok ? [] : bad.errors).toEqual([
      'AGENTBOX_DATA_PLANE_NODE_FLAGS: must be "thread" or Node flags, each starting with "--"',
    ]);
  });

  it("refuses an in-memory history, which the API and the reconciler thread could not share", () => {
    const r = readHostEnv({
      ...valid,
      AGENTBOX_HISTORY_PATH: ":memory:",
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.errors.join("\n")).toMatch(/AGENTBOX_HISTORY_PATH: must be a file/);
  });

  it("reads tokens from files and names every bad variable without echoing secrets", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    writeFileSync(join(dir, "cb"), `${token("c")}\n`);
    const ok = readHostEnv({
      ...base,
      AGENTBOX_CALLBACK_TOKEN_FILE: join(dir, "cb"),
      AGENTBOX_ADMIN_TOKEN: token("d"),
    });
    expect(ok.ok && ok.value.callbackToken).toBe(token("c"));

    const bad = readHostEnv({
      AGENTBOX_LISTEN_PORT: "99999",
      AGENTBOX_TICK_SECONDS: "-1",
      AGENTBOX_CALLBACK_TOKEN: "short",
    });
    expect(bad.ok).toBe(false);
    const text = bad.ok ? "" : bad.errors.join("\n");
    for (const name of [
      "AGENTBOX_TLS_CERT",
      "AGENTBOX_LISTEN_PORT",
      "AGENTBOX_TICK_SECONDS",
      "AGENTBOX_CALLBACK_TOKEN",
    ])
      expect(text).toContain(name);
    expect(text).not.toContain("short");

    const missing = readHostEnv({ ...base, AGENTBOX_ADMIN_TOKEN_FILE: join(dir, "nope") });
    expect(missing.ok ? [] : missing.errors).toEqual([
      "AGENTBOX_CALLBACK_TOKEN: is required (or AGENTBOX_CALLBACK_TOKEN_FILE)",
      `AGENTBOX_ADMIN_TOKEN_FILE: cannot read ${join(dir, "nope")} (ENOENT)`,
    ]);
    const same = readHostEnv({
      ...base,
      AGENTBOX_CALLBACK_TOKEN: token("e"),
      AGENTBOX_ADMIN_TOKEN: token("e"),
    });
    expect(same.ok).toBe(false);
  });

  it("reads the sealing key inline or from a file, and refuses a short one without echoing it", () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    writeFileSync(join(dir, "seal"), `${"k".repeat(40)}\n`);
    writeFileSync(join(dir, "short"), "tiny-key\n");
    const tokens = { AGENTBOX_CALLBACK_TOKEN: token("a"), AGENTBOX_ADMIN_TOKEN: token("b") };
    const fromFile = readHostEnv({ ...base, ...tokens, AGENTBOX_SEALING_KEY_FILE: join(dir, "seal") });
    expect(fromFile.ok && fromFile.value.sealingKey).toBe("k".repeat(40));
    const short = readHostEnv({ ...base, ...tokens, AGENTBOX_SEALING_KEY_FILE: join(dir, "short") });
    expect(short.ok ? [] : short.errors).toEqual([
      `AGENTBOX_SEALING_KEY_FILE: ${join(dir, "short")} holds fewer than 32 characters`,
    ]);
    const inline = readHostEnv({
      ...base,
      ...tokens,
      AGENTBOX_SEALING_KEY: "tiny-key",
      AGENTBOX_ENVD_PORT: "0",
    });
    const text = inline.ok ? "" : inline.errors.join("\n");
    expect(text).toContain("AGENTBOX_SEALING_KEY: must be at least 32 characters");
    expect(text).toContain("AGENTBOX_ENVD_PORT");
    expect(text).not.toContain("tiny-key");
  });

  it("reads the optional pulled activity source, its token inline or from a file", () => {
    const tokens = { AGENTBOX_CALLBACK_TOKEN: token("a"), AGENTBOX_ADMIN_TOKEN: token("b") };
    const none = readHostEnv({ ...base, ...tokens });
    expect(none.ok && none.value.activitySource).toBeUndefined();
    const inline = readHostEnv({
      ...base,
      ...tokens,
      AGENTBOX_ACTIVITY_SOURCE_URL: "http://proxy.agentbox:9090/stats",
      AGENTBOX_ACTIVITY_SOURCE_TOKEN: "t",
    });
    expect(inline.ok && inline.value.activitySource).toEqual({
      url: "http://proxy.agentbox:9090/stats",
      token: "t",
      timeoutMs: 3000,
    });
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    writeFileSync(join(dir, "tok"), "from-file\n");
    expect(
      readActivitySource({
        AGENTBOX_ACTIVITY_SOURCE_URL: "https://proxy/stats",
        AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: join(dir, "tok"),
        AGENTBOX_ACTIVITY_SOURCE_TIMEOUT_SECONDS: "1.5",
      }),
    ).toEqual({ ok: true, value: { url: "https://proxy/stats", token: "from-file", timeoutMs: 1500 } });
  });

  it("names every bad activity source variable without echoing the URL or the token", () => {
    const bad = readHostEnv({
      ...valid,
      AGENTBOX_ACTIVITY_SOURCE_URL: "ftp://secret-host/x",
      AGENTBOX_ACTIVITY_SOURCE_TIMEOUT_SECONDS: "0",
    });
    expect(bad.ok ? [] : bad.errors).toEqual([
      "AGENTBOX_ACTIVITY_SOURCE_URL: must be an http(s) URL",
      "AGENTBOX_ACTIVITY_SOURCE_TIMEOUT_SECONDS: must be more than 0",
    ]);
    expect(readActivitySource({ AGENTBOX_ACTIVITY_SOURCE_TOKEN: "secret-token" })).toEqual({
      ok: false,
      errors: ["AGENTBOX_ACTIVITY_SOURCE_TOKEN: needs AGENTBOX_ACTIVITY_SOURCE_URL"],
    });
    expect(
      readActivitySource({
        AGENTBOX_ACTIVITY_SOURCE_URL: "http://p/",
        AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: "/nope",
      }),
    ).toEqual({ ok: false, errors: ["AGENTBOX_ACTIVITY_SOURCE_TOKEN_FILE: cannot read /nope (ENOENT)"] });
  });
});
