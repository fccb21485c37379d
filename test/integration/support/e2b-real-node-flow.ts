// The official `e2b` SDK, unmodified, against a sandbox on the real node (envd inside its
// container): run as its own process, configured as a user configures it (E2B_API_URL,
// E2B_API_KEY, NODE_EXTRA_CA_CERTS; E2B_SANDBOX_URL aims envd calls at the router by header
// routing, or E2B_TEST_PROXY is the SDK's `proxy` option for host routing over TLS). It connects
// to E2B_TEST_SANDBOX and prints one JSON line with what each call returned, for the test to
// check against what Kubernetes says of the pod. E2B_TEST_WEB=1 only asks the web sandbox's
// identity and where its port 8080 is.
import { createHash } from "node:crypto";
import { Sandbox } from "e2b";

const out: Record<string, unknown> = {};
const failure = (e: unknown) => `${(e as Error).name}: ${(e as Error).message}`;
const via = process.env.E2B_TEST_PROXY ? { proxy: process.env.E2B_TEST_PROXY } : {};
try {
  const sbx = await Sandbox.connect(process.env.E2B_TEST_SANDBOX ?? "", via);
  const who = await sbx.commands.run("id; hostname; cat /proc/1/cgroup");
  out.identity = { stdout: who.stdout, exitCode: who.exitCode };
  out.image = (await sbx.commands.run("cat /etc/agentbox-image")).stdout;
  out.host8080 = sbx.getHost(8080);
  if (process.env.E2B_TEST_WEB) {
    out.local8080 = (await sbx.commands.run("wget -qO- http://127.0.0.1:8080/")).stdout;
  } else {
    // A stream: the command prints, then waits for a file the SDK writes only once that first
    // line has arrived; output held back until the end would leave it waiting past its timeout.
    const chunks: string[] = [];
    const streamed = await sbx.commands.run(
      "echo first; while [ ! -e /tmp/stream-go ]; do sleep 0.1; done; echo second",
      {
        timeoutMs: 60_000,
        onStdout: async (data) => {
          chunks.push(data);
          if (data.includes("first")) await sbx.files.write("/tmp/stream-go", "go");
        },
      },
    );
    out.stream = { chunks, stdout: streamed.stdout };
    out.exit3 = await sbx.commands.run("echo oops >&2; exit 3").then(
      () => "no error",
      (e: unknown) => ({
        name: (e as Error).name,
        exitCode: (e as { exitCode?: number }).exitCode,
        stderr: (e as { stderr?: string }).stderr,
      }),
    );

    // A background command reading its stdin, and one killed.
    const reader = await sbx.commands.run('read line; echo "got $line as $(id -u)"', {
      background: true,
      stdin: true,
    });
    await sbx.commands.sendStdin(reader.pid, "hello through stdin\n");
    out.stdin = (await reader.wait()).stdout;
    const sleeper = await sbx.commands.run("sleep 600", { background: true });
    const listed = await sbx.commands.list();
    out.listedSleeper = listed.some((p) => p.pid === sleeper.pid);
    out.psBeforeKill = (await sbx.commands.run("ps -o pid,user,args")).stdout;
    out.killed = await sbx.commands.kill(sleeper.pid);
    out.afterKill = await sleeper.wait().then(() => "exited 0", failure);
    out.psAfterKill = (await sbx.commands.run("ps -o pid,user,args")).stdout;

    // 1 MiB both ways, byte-identical, and the file is the container's.
    const path = "/home/user/real-node/blob.bin";
    const blob = new Uint8Array(1 << 20).map((_, i) => (i * 131 + (i >> 10) * 7) & 255);
    await sbx.files.write(path, blob.buffer);
    const back = await sbx.files.read(path, { format: "bytes" });
    out.file = {
      size: back.length,
      equal: Buffer.compare(Buffer.from(back), Buffer.from(blob)) === 0,
      sha256: createHash("sha256").update(blob).digest("hex"),
      sha256sum: (await sbx.commands.run(`sha256sum ${path}`)).stdout,
      ls: (await sbx.commands.run(`ls -ln ${path}`)).stdout,
    };
  }
} catch (e) {
  out.error = failure(e);
}
console.log(JSON.stringify(out));
