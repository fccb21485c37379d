// Where the console's browser test finds Chromium (ADR 0021): Debian's package, installed by the
// test preflight when missing, or the binary AGENTBOX_CHROMIUM names. No test tool downloads one.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

/** CHROMIUM_CANDIDATES are where Debian (and derivatives) put the browser. */
const CHROMIUM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];

/**
 * CHROMIUM_ARGS start it headless as root on a machine without a network: no sandbox (root),
 * and none of the background connections a closed network refuses.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** chromiumPath is AGENTBOX_CHROMIUM, else the first Debian location that exists. */
export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.AGENTBOX_CHROMIUM) return env.AGENTBOX_CHROMIUM;
  return CHROMIUM_CANDIDATES.find((p) => existsSync(p));
}

/**
 * ensureChromium finds Chromium, installing Debian's package (apt-get, as root) when it is
 * missing; it returns the path, or why there is none and how to fix that.
 */
export function ensureChromium(log: (line: string) => void): { path: string } | { problem: string } {
  const found = chromiumPath();
  if (found) return { path: found };
  const fix = "apt-get install chromium (Debian's package), or set AGENTBOX_CHROMIUM to a Chromium binary";
  if (process.getuid?.() !== 0) return { problem: `Chromium is not installed: ${fix}` };
  try {
    log("installing Debian's chromium for the console's browser test (apt-get)");
    execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
  } catch (e) {
    return { problem: `installing chromium failed (${String(e)}): ${fix}` };
  }
  const installed = chromiumPath();
  return installed ? { path: installed } : { problem: `apt-get installed no Chromium: ${fix}` };
}
