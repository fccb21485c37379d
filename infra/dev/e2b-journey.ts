// The README's E2B journey on the local cluster: the official `e2b` SDK, unmodified, configured
// the way a user configures it (E2B_API_URL, E2B_API_KEY, NODE_EXTRA_CA_CERTS), creates a sandbox
// from a template, reads it back and kills it. `npm start` prints the command with its values.
// `--run CMD` also runs CMD in the sandbox (through the router: E2B_SANDBOX_URL) and prints it.
import { parseArgs } from "node:util";
import { Sandbox } from "e2b";

const { positionals, values } = parseArgs({ allowPositionals: true, options: { run: { type: "string" } } });
const template = positionals[0] ?? "python-3-12";
for (const name of ["E2B_API_URL", "E2B_API_KEY"]) {
  if (!process.env[name]) {
    console.error(`${name} is not set; \`npm start\` prints the command with every value filled in`);
    process.exit(2);
  }
}
const sbx = await Sandbox.create(template, { metadata: { from: "e2b-journey" }, timeoutMs: 120_000 });
console.log(`created sandbox ${sbx.sandboxId} from template ${template}`);
const info = await Sandbox.getInfo(sbx.sandboxId);
console.log(`state ${info.state}, started ${info.startedAt.toISOString()}, ends ${info.endAt.toISOString()}`);
if (values.run !== undefined) {
  const result = await sbx.commands.run(values.run, { timeoutMs: 60_000 });
  console.log(`$ ${values.run}\n${result.stdout}${result.stderr}`.trimEnd());
}
console.log(`killed: ${await Sandbox.kill(sbx.sandboxId)}`);
