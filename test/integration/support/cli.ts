import { execFile } from "node:child_process";

/**
 * runCli runs `node bin/agentbox.ts <args>` from the repository root and resolves with its exit
 * code and output, whatever the code (a test asserts on refusals too).
 */
export function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["bin/agentbox.ts", ...args],
      { cwd: new URL("../../../", import.meta.url).pathname, env, timeout: 120_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
