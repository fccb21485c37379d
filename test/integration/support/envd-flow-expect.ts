import { expect } from "vitest";

/**
 * expectEnvdFlow asserts what e2b-envd-flow.ts printed (its last JSON line) for a sandbox created
 * with GREETING="hello from create": the SDK's commands, streams, files, kills and token checks
 * all behaved as on E2B, whether it reached envd directly or through the router.
 */
export function expectEnvdFlow(stdout: string): void {
  const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
  expect(out.error).toBeUndefined();
  expect(out.echo).toEqual({ stdout: "hi\n", stderr: "", exitCode: 0 });
  expect(out.env).toBe("hello from create\n");
  // Output streams as it comes: four chunks spread over ~2 s, not one at the end.
  const ticks = out.ticks as { at: number; data: string }[];
  expect(ticks.map((t) => t.data).join("")).toBe("tick1\ntick2\ntick3\ntick4\n");
  expect(ticks.length).toBe(4);
  expect((ticks.at(-1)?.at ?? 0) - (ticks[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_500);
  expect(out.exit3).toEqual({ name: "CommandExitError", exitCode: 3, stderr: "oops\n" });
  expect(out.text).toBe("hello, file\n");
  expect(out.catText).toBe("hello, file\n");
  expect(out.binary).toEqual({ size: 1 << 20, equal: true });
  expect(out.list).toEqual([
    { name: "blob.bin", type: "file", size: 1 << 20 },
    { name: "notes", type: "dir", size: expect.any(Number) },
  ]);
  expect(out.missing).toMatch(/^FileNotFoundError: .*does not exist/);
  expect(out.escape).toMatch(/escapes the sandbox/);
  expect(out).toMatchObject({ listedSleeper: true, killed: true, killedAgain: false });
  expect(out.afterKill).toMatch(/CommandExitError: signal: killed/);
  expect(out.wrongTokenRun).toMatch(/^AuthenticationError/);
  expect(out.wrongTokenList).toMatch(/^AuthenticationError/);
  expect(out.wrongTokenRead).toMatch(/^AuthenticationError/);
}
