import { mkdir, mkdtemp, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { confineReal, hostPath, resolve, sandboxPathOf } from "../../infra/dev/envd/paths.ts";
import { Pods } from "../../infra/dev/envd/pods.ts";
import { serveEnvd } from "../../infra/dev/envd/serve.ts";

// envd inside a container (infra/dev/envd/container-main.ts): one sandbox over a given root, the
// container's `/`, shared by every address, never made nor removed by envd; paths map 1:1.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});
const tempRoot = async () => {
  const dir = await mkdtemp(join(tmpdir(), "envd-container-"));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, "home/user"), { recursive: true });
  return dir;
};

describe("paths over the root /", () => {
  it("map a sandbox path to the same host path and back", async () => {
    expect(hostPath("/", "/home/user/x")).toBe("/home/user/x");
    expect(hostPath("/", "/")).toBe("/");
    expect(sandboxPathOf("/", "/home/user/x")).toBe("/home/user/x");
    expect(sandboxPathOf("/", "/")).toBe("/");
    await expect(confineReal("/", "/etc/passwd")).resolves.toBeUndefined();
    expect(await resolve({ dir: "/", real: "/" }, "~/notes/a.txt")).toEqual({
      sbx: "/home/user/notes/a.txt",
      host: "/home/user/notes/a.txt",
    });
  });
});

describe("a shared sandbox (Pods over one root)", () => {
  it("is the same sandbox from every address, and closing it leaves the root in place", async () => {
    const root = await tempRoot();
    const pods = new Pods(root, { processes: 4, watchers: 4 }, undefined, true);
    const a = await pods.of("10.0.0.1");
    expect(a.root.dir).toBe(root);
    expect(await pods.init("10.0.0.2", { accessToken: "t1" })).toEqual({ ok: true, applied: true });
    expect(await pods.of("127.0.0.1")).toBe(a);
    expect(a.token).toBe("t1");
    expect((await pods.init("10.0.0.3", { accessToken: "other" })).ok).toBe(false);
    await pods.close();
    expect((await stat(join(root, "home/user"))).isDirectory()).toBe(true);
  });
});

describe("serveEnvd over a given root", () => {
  it("answers /health and runs commands in the root's /home/user with HOME there", async () => {
    const root = await tempRoot();
    const envd = await serveEnvd({ host: "127.0.0.1", port: 0, root });
    cleanup.push(() => new Promise<void>((done) => envd.server.close(() => done())));
    const base = `http://127.0.0.1:${envd.port}`;
    expect((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) })).status).toBe(204);
    const json = new TextEncoder().encode(
      JSON.stringify({ process: { cmd: "/bin/sh", args: ["-c", 'pwd; echo "$HOME"'] } }),
    );
    const body = new Uint8Array(5 + json.length);
    new DataView(body.buffer).setUint32(1, json.length);
    body.set(json, 5);
    const res = await fetch(`${base}/process.Process/Start`, {
      method: "POST",
      headers: { "content-type": "application/connect+json" },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const buf = Buffer.from(await res.arrayBuffer());
    let out = "";
    for (let i = 0; i < buf.length; i += 5 + buf.readUInt32BE(i + 1)) {
      const msg = JSON.parse(buf.subarray(i + 5, i + 5 + buf.readUInt32BE(i + 1)).toString());
      if (msg.event?.data?.stdout) out += Buffer.from(msg.event.data.stdout, "base64").toString();
    }
    const home = join(await realpath(root), "home/user");
    expect(out.split("\n").slice(0, 2)).toEqual([home, join(root, "home/user")]);
  });
});
