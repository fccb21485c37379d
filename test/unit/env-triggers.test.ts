import { describe, expect, it } from "vitest";
import { envRuns, poolsSpecWritten } from "../../functions/runs/env-triggers.ts";
import type { ActionOutcome } from "../../functions/steps/execute.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";

const outcome = (
  target: string,
  op: ActionOutcome["op"],
  result: ActionOutcome["result"],
): ActionOutcome => ({
  target,
  op,
  result,
  why: "test",
});

describe("poolsSpecWritten", () => {
  it("names the pools an Env run created or patched, once each", () => {
    expect(
      poolsSpecWritten([
        outcome("SandboxEnv/ns/env", "patch", "done"),
        outcome("SandboxPool/ns/a", "patch", "done"),
        outcome("SandboxPool/ns/a", "patch", "done"),
        outcome("SandboxPool/ns/b", "create", "done"),
      ]),
    ).toEqual(["ns/a", "ns/b"]);
  });

  it("leaves out status writes, lost races, errors and deletions", () => {
    expect(
      poolsSpecWritten([
        outcome("SandboxPool/ns/a", "patch-status", "done"),
        outcome("SandboxPool/ns/b", "patch", "conflict"),
        outcome("SandboxPool/ns/c", "patch", "error"),
        outcome("SandboxPool/ns/d", "delete", "done"),
      ]),
    ).toEqual([]);
  });
});

describe("envRuns", () => {
  const env = (name: string, members: string[], template = "t") =>
    ({
      metadata: { name, namespace: "ns" },
      spec: {
        templateRef: { name: template },
        clusters: [{ clusterID: "local", members: members.map((m) => ({ name: m })) }],
      },
    }) as SandboxEnv;

  it("runs at once the Envs whose spec or member pool itself was written; status and templates wait", () => {
    const envs = [
      env("named", ["n"]),
      env("marked", ["m"]),
      env("busy", ["b"]),
      env("rendered", ["r"], "python"),
    ];
    const runs = envRuns(
      envs,
      {
        envs: ["ns/named"],
        pools: [
          { namespace: "ns", name: "m", urgent: true },
          { namespace: "ns", name: "b" },
        ],
        templates: ["python"],
      },
      "local",
    );
    expect(new Map(runs.map((r) => [r.key, r.urgent]))).toEqual(
      new Map([
        ["ns/named", true],
        ["ns/marked", true],
        ["ns/rendered", false],
        ["ns/busy", false],
      ]),
    );
  });
});
