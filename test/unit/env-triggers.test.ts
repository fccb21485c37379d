import { describe, expect, it } from "vitest";
import { poolsSpecWritten } from "../../functions/env-triggers.ts";
import type { ActionOutcome } from "../../functions/execute.ts";

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
