// The official e2b SDK, unmodified, in a process of its own for `npm run bench:pause`
// (bench/pause.ts): the SDK reads its settings from the environment as a user's program does
// (E2B_API_URL, E2B_API_KEY, E2B_SANDBOX_URL: the sandbox router; NODE_EXTRA_CA_CERTS: the local
// cluster's CA), so it runs apart from the bench, driven over IPC (bench/child-ipc.ts). Each op
// times what a user waits for, on this process's clock:
//   create {template}           Sandbox.create → answered, then commands.run("true") → answered
//   write {sandboxId, bytes, seed, path}  files.write of `bytes` seeded bytes, checked in the sandbox
//   pause {sandboxId}           betaPause() → answered (must say true)
//   resume {sandboxId, path, sha256}  Sandbox.connect → answered, commands.run("true") → answered,
//                                `sha256sum path` → answered; a different hash fails the op
//   kill {sandboxId}            Sandbox.kill
//   close                       exits (as it does when the bench's IPC channel closes)
import { createCipheriv, createHash } from "node:crypto";
import { Sandbox } from "e2b";

/** SDK_TIMEOUT_MS bounds every SDK request (a 100 MiB write, a pause's commit, a resume's pull). */
const SDK_TIMEOUT_MS = 300_000;
/** LIFETIME_MS is each sandbox's lifetime: longer than any round. */
const LIFETIME_MS = 900_000;

type Request = { id: number; op: string } & Record<string, unknown>;

const open = new Map<string, Sandbox>();
const send = (m: unknown) => process.send?.(m);
const since = (t0: number) => performance.now() - t0;

/**
 * seededBytes is `bytes` bytes of AES-128-CTR keystream keyed by the seed: the same seed always
 * gives the same bytes, and they do not compress (a layer's size is the file's size).
 */
function seededBytes(bytes: number, seed: string): Uint8Array {
  const key = createHash("sha256").update(seed).digest().subarray(0, 16);
  const cipher = createCipheriv("aes-128-ctr", key, Buffer.alloc(16));
  const out = new Uint8Array(bytes);
  out.set(cipher.update(Buffer.alloc(bytes)));
  return out;
}

/** sandbox is the handle this process holds on an id (the one create or resume answered). */
function sandbox(id: unknown): Sandbox {
  const s = open.get(String(id));
  if (!s) throw new Error(`no handle on sandbox ${String(id)}`);
  return s;
}

/** hashInSandbox runs `sha256sum path` in the sandbox and answers the hex digest it printed. */
async function hashInSandbox(s: Sandbox, path: string): Promise<string> {
  const run = await s.commands.run(`sha256sum ${path}`, { requestTimeoutMs: SDK_TIMEOUT_MS });
  if (run.exitCode !== 0) throw new Error(`sha256sum ${path} exited ${run.exitCode}: ${run.stderr}`);
  return run.stdout.trim().split(/\s+/)[0] ?? "";
}

async function handle(m: Request): Promise<Record<string, unknown>> {
  if (m.op === "create") {
    const t0 = performance.now();
    const s = await Sandbox.create(String(m.template), {
      timeoutMs: LIFETIME_MS,
      requestTimeoutMs: SDK_TIMEOUT_MS,
    });
    const createMs = since(t0);
    const run = await s.commands.run("true");
    const commandMs = since(t0);
    if (run.exitCode !== 0) throw new Error(`true exited ${run.exitCode}`);
    open.set(s.sandboxId, s);
    return { sandboxId: s.sandboxId, createMs, commandMs };
  }
  if (m.op === "write") {
    const s = sandbox(m.sandboxId);
    const path = String(m.path);
    const data = seededBytes(Number(m.bytes), String(m.seed));
    const sha256 = createHash("sha256").update(data).digest("hex");
    const t0 = performance.now();
    await s.files.write(path, data.buffer as ArrayBuffer, { requestTimeoutMs: SDK_TIMEOUT_MS });
    const writeMs = since(t0);
    const inside = await hashInSandbox(s, path);
    if (inside !== sha256)
      throw new Error(`${path} written: sha256 ${inside} in the sandbox, ${sha256} sent`);
    return { sha256, writeMs };
  }
  if (m.op === "pause") {
    const t0 = performance.now();
    const paused = await sandbox(m.sandboxId).betaPause({ requestTimeoutMs: SDK_TIMEOUT_MS });
    const pauseMs = since(t0);
    if (paused !== true) throw new Error(`betaPause of ${String(m.sandboxId)} answered ${paused}`);
    open.delete(String(m.sandboxId));
    return { pauseMs };
  }
  if (m.op === "resume") {
    const id = String(m.sandboxId);
    const t0 = performance.now();
    const s = await Sandbox.connect(id, { timeoutMs: LIFETIME_MS, requestTimeoutMs: SDK_TIMEOUT_MS });
    const connectMs = since(t0);
    const run = await s.commands.run("true");
    const commandMs = since(t0);
    if (run.exitCode !== 0) throw new Error(`true exited ${run.exitCode} after the resume`);
    const hash = await hashInSandbox(s, String(m.path));
    const hashMs = since(t0);
    if (hash !== m.sha256)
      throw new Error(
        `after the resume of ${id}, ${String(m.path)} hashes to ${hash}, not ${String(m.sha256)}`,
      );
    if (s.sandboxId !== id) throw new Error(`connect to ${id} answered sandbox ${s.sandboxId}`);
    open.set(id, s);
    return { connectMs, commandMs, hashMs };
  }
  if (m.op === "kill") {
    const killed = await Sandbox.kill(String(m.sandboxId), { requestTimeoutMs: SDK_TIMEOUT_MS });
    open.delete(String(m.sandboxId));
    return { killed };
  }
  throw new Error(`unknown op ${m.op}`);
}

if (!process.send) throw new Error("pause-sdk: no IPC channel (bench/pause.ts forks it)");
process.on("message", (m: Request) => {
  if (m.op === "close") process.exit(0);
  handle(m).then(
    (out) => send({ id: m.id, ...out }),
    (e: Error) => send({ id: m.id, error: `${e.name}: ${e.message}` }),
  );
});
// The bench gone (its IPC channel closed), nothing is left to drive: exit rather than linger.
process.on("disconnect", () => process.exit(0));
send({ ready: true });
