import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  imageConfig,
  imageManifest,
  layoutIndex,
  MEDIA,
  REF_NAME,
  sha256,
} from "../../infra/images/oci-layout.ts";
import { IMAGE_REGISTRY, imageRef } from "../../infra/images/refs.ts";
import { baseLayer, layersOf, parseLdd, runOf, runtimeLayer, topLayer } from "../../infra/images/rootfs.ts";
import { LAYER_MTIME, sortEntries, type TarEntry, tarStream } from "../../infra/images/tar.ts";

// The image builder's pure parts (infra/images/): the deterministic tar archive (tar-stream writes
// the headers; tar.ts decides everything that makes two builds the same bytes), the OCI documents,
// and the recipe (which layer holds what, how each image runs).

const bytes = (s: string) => new TextEncoder().encode(s);

/** chunksOf reads a layer's whole archive stream. */
async function chunksOf(entries: readonly TarEntry[]): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of tarStream(entries)) chunks.push(chunk as Buffer);
  return chunks;
}
const archive = async (entries: readonly TarEntry[]) => Buffer.concat(await chunksOf(entries));
const field = (h: Uint8Array, at: number, width: number) =>
  Buffer.from(h.subarray(at, at + width))
    .toString("latin1")
    .replace(/\0.*$/s, "");
const octal = (h: Uint8Array, at: number, width: number) => Number.parseInt(field(h, at, width).trim(), 8);

interface Member {
  name: string;
  type: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  owners: string;
  magic: string;
  dev: string;
  checksumOk: boolean;
}

/** members reads back every header of a tar archive, byte field by byte field. */
function members(tar: Buffer): Member[] {
  const out: Member[] = [];
  for (let at = 0; at + 512 <= tar.length; ) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const prefix = field(h, 345, 155);
    const size = octal(h, 124, 12);
    let sum = 0;
    h.forEach((b, i) => {
      sum += i >= 148 && i < 156 ? 0x20 : b;
    });
    out.push({
      name: (prefix ? `${prefix}/` : "") + field(h, 0, 100),
      type: field(h, 156, 1),
      mode: octal(h, 100, 8),
      uid: octal(h, 108, 8),
      gid: octal(h, 116, 8),
      size,
      mtime: octal(h, 136, 12),
      owners: field(h, 265, 32) + field(h, 297, 32),
      magic: field(h, 257, 8),
      dev: `${octal(h, 329, 8)}/${octal(h, 337, 8)}`,
      checksumOk: octal(h, 148, 8) === sum,
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

function tar(args: string[], input: Buffer): { status: number | null; stdout: string; stderr: string } {
  return spawnSync("tar", args, { input, encoding: "utf8", timeout: 10_000 });
}

describe("the layer tar archive", () => {
  const entries: TarEntry[] = [
    { path: "etc/passwd", type: "file", mode: 0o644, data: bytes("root:x:0:0::/:/bin/sh\n") },
    { path: "home/user", type: "dir", mode: 0o755, uid: 1000, gid: 1000 },
    { path: "bin/sh", type: "symlink", target: "busybox" },
    { path: "etc", type: "dir", mode: 0o755 },
    { path: "bin", type: "dir", mode: 0o755 },
    { path: "tmp", type: "dir", mode: 0o1777 },
    { path: "bin/empty", type: "file", mode: 0o600, data: new Uint8Array(0) },
    { path: "home", type: "dir", mode: 0o755 },
  ];

  it("writes the same bytes whatever order the entries come in, parents before children", async () => {
    const a = await archive(entries);
    expect(a.equals(await archive([...entries].reverse()))).toBe(true);
    expect(sha256(a)).toBe(sha256(await archive(entries)));
    expect(members(a).map((m) => m.name)).toEqual([
      "bin/",
      "bin/empty",
      "bin/sh",
      "etc/",
      "etc/passwd",
      "home/",
      "home/user/",
      "tmp/",
    ]);
    expect(a.length % 512).toBe(0);
    expect(a.subarray(-1024).every((b) => b === 0)).toBe(true);
    expect(sortEntries(entries).map((e) => e.path)).toEqual(members(a).map((m) => m.name.replace(/\/$/, "")));
  });

  it("puts nothing of the machine or the clock in a header: fixed mtime, numeric owners, plain ustar", async () => {
    const all = members(await archive(entries));
    expect(all).toHaveLength(entries.length);
    for (const m of all) {
      expect(m).toMatchObject({
        mtime: LAYER_MTIME,
        owners: "",
        magic: "ustar",
        dev: "0/0",
        checksumOk: true,
      });
      expect(m.type).toMatch(/^[025]$/); // file, symlink, directory: no pax or GNU long-name headers
    }
    const by = new Map(all.map((m) => [m.name, m]));
    expect(by.get("tmp/")).toMatchObject({ type: "5", mode: 0o1777, uid: 0, gid: 0 });
    expect(by.get("home/user/")).toMatchObject({ type: "5", uid: 1000, gid: 1000 });
    expect(by.get("bin/sh")).toMatchObject({ type: "2", mode: 0o777, size: 0 });
    expect(by.get("bin/empty")).toMatchObject({ type: "0", mode: 0o600, size: 0 });
    expect(by.get("etc/passwd")).toMatchObject({ type: "0", mode: 0o644, size: 22 });
  });

  it("is read back by tar(1) with the same names, modes, owners, times and contents", async () => {
    const big = new Uint8Array(1_000_003).map((_, i) => (i * 7) & 0xff);
    const withBig = [...entries, { path: "etc/big", type: "file", mode: 0o755, data: big } as const];
    const chunks = await chunksOf(withBig);
    // A file's bytes go out as the very buffer the entry holds, not a copy.
    expect(chunks.some((c) => c.buffer === big.buffer)).toBe(true);
    const tarball = Buffer.concat(chunks);
    const listed = tar(["-tv", "--numeric-owner", "--full-time", "-f", "-"], tarball);
    expect(listed.stderr).toBe("");
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/^lrwxrwxrwx 0\/0 +0 2000-01-01 00:00:00 bin\/sh -> busybox$/m);
    expect(listed.stdout).toMatch(/^drwxr-xr-x 1000\/1000 +0 2000-01-01 00:00:00 home\/user\/$/m);
    expect(listed.stdout).toMatch(/^drwxrwxrwt 0\/0 +0 2000-01-01 00:00:00 tmp\/$/m);
    expect(listed.stdout).toMatch(/^-rwxr-xr-x 0\/0 +1000003 2000-01-01 00:00:00 etc\/big$/m);
    expect(listed.stdout.trim().split("\n")).toHaveLength(withBig.length);
    expect(tar(["-xOf", "-", "etc/passwd"], tarball).stdout).toBe("root:x:0:0::/:/bin/sh\n");
    const out = spawnSync("tar", ["-xOf", "-", "etc/big"], { input: tarball, timeout: 10_000 });
    expect(out.status).toBe(0);
    expect(sha256(out.stdout)).toBe(sha256(big));
  });

  it("fits a long path in ustar's prefix, and refuses bad paths, repeats, mode 0 and huge owners", async () => {
    const long = `${"d".repeat(80)}/${"e".repeat(80)}/f`;
    const tarball = await archive([{ path: long, type: "file", mode: 0o644, data: bytes("x") }]);
    expect(members(tarball).map((m) => [m.name, m.type])).toEqual([[long, "0"]]);
    expect(tar(["-tf", "-"], tarball).stdout).toBe(`${long}\n`);
    const bad = (e: Partial<TarEntry>) => () =>
      tarStream([{ path: "x", type: "dir", mode: 0o755, ...e } as TarEntry]);
    for (const path of ["/etc", "a/../b", "..", "", "a//b", "a/", "./a"])
      expect(bad({ path }), path).toThrow(/relative path/);
    expect(() => tarStream([entries[0] as TarEntry, entries[0] as TarEntry])).toThrow(/twice/);
    expect(bad({ mode: 0 })).toThrow(/mode 0/);
    expect(bad({ uid: 0o1000000 })).toThrow(/owner id/);
  });
});

describe("the OCI documents", () => {
  it("describe each blob by the sha256 of its exact bytes, deterministically", () => {
    const config = imageConfig(runOf("sandbox-a"), ["sha256:aa", "sha256:bb"]);
    expect(config.descriptor).toEqual({
      mediaType: MEDIA.config,
      digest: sha256(config.bytes),
      size: config.bytes.length,
    });
    expect(imageConfig(runOf("sandbox-a"), ["sha256:aa", "sha256:bb"]).bytes.equals(config.bytes)).toBe(true);
    const layer = { mediaType: MEDIA.layer, digest: "sha256:aa", size: 3 };
    const manifest = imageManifest(config.descriptor, [layer]);
    expect(JSON.parse(manifest.bytes.toString())).toEqual({
      schemaVersion: 2,
      mediaType: MEDIA.manifest,
      config: config.descriptor,
      layers: [layer],
    });
    const index = JSON.parse(
      layoutIndex([{ refName: "agentbox/x:1", manifest: manifest.descriptor }]).bytes.toString(),
    );
    expect(index.manifests[0]).toMatchObject({
      digest: manifest.descriptor.digest,
      annotations: { [REF_NAME]: "agentbox/x:1" },
    });
  });

  it("give each image its own config: a and b differ in their marker only", () => {
    const a = JSON.parse(imageConfig(runOf("sandbox-a"), []).bytes.toString());
    const b = JSON.parse(imageConfig(runOf("sandbox-b"), []).bytes.toString());
    expect(a.config.User).toBe("1000:1000");
    expect(a.config.Env).toContain("HOME=/home/user");
    expect(a.config.Entrypoint).toEqual(["/sbin/agentbox-init", "/usr/local/bin/node", "/opt/envd/envd.mjs"]);
    expect(a.config.ExposedPorts).toEqual({ "49983/tcp": {} });
    const strip = (c: typeof a) =>
      JSON.stringify(c).replaceAll("sandbox-a", "X").replaceAll("sandbox-b", "X");
    expect(strip(a)).toBe(strip(b));
    expect(runOf("web").entrypoint.join(" ")).toMatch(/httpd -f -p 8080 .*& exec \/usr\/local\/bin\/node/);
    expect(runOf("pause").entrypoint).toEqual(["/sbin/agentbox-hold"]);
  });
});

describe("the image recipe", () => {
  it("puts busybox, a bash for `bash -l -c`, the accounts and a sticky /tmp in the base layer", () => {
    const base = baseLayer(bytes("BB"), ["sh", "ls", "busybox", "id", "../evil"]);
    const by = new Map(base.map((e) => [e.path, e]));
    expect(by.get("bin/ls")).toEqual({ path: "bin/ls", type: "symlink", target: "busybox" });
    expect(by.has("bin/busybox") && !by.has("bin/../evil")).toBe(true);
    const bash = by.get("bin/bash");
    expect(bash?.type === "file" && new TextDecoder().decode(bash.data)).toMatch(
      /^#!\/bin\/sh\n[\s\S]*exec \/bin\/sh "\$@"/,
    );
    expect(by.get("tmp")).toMatchObject({ type: "dir", mode: 0o1777 });
    expect(by.get("home/user")).toMatchObject({ uid: 1000, gid: 1000 });
    const passwd = by.get("etc/passwd");
    expect(passwd?.type === "file" && new TextDecoder().decode(passwd.data)).toMatch(
      /^user:x:1000:1000:user:\/home\/user:/m,
    );
  });

  it("lays Node's libraries at the paths ldd found them, and marks each image", () => {
    const ldd = `\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n`;
    expect(parseLdd(ldd)).toEqual(["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]);
    const rt = runtimeLayer({
      node: bytes("N"),
      libs: parseLdd(ldd).map((path) => ({ path, data: bytes("L") })),
      envd: bytes("E"),
    });
    const paths = rt.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        "lib",
        "lib/x86_64-linux-gnu",
        "lib/x86_64-linux-gnu/libc.so.6",
        "lib64/ld-linux-x86-64.so.2",
        "usr/local/bin/node",
        "opt/envd/envd.mjs",
      ]),
    );
    const marker = topLayer("sandbox-b").find((e) => e.path === "etc/agentbox-image");
    expect(marker?.type === "file" && new TextDecoder().decode(marker.data)).toBe("sandbox-b\n");
    expect(layersOf("idle")).toEqual(["base", "top"]);
    expect(layersOf("web")).toEqual(["base", "runtime", "top"]);
  });

  it("names images under the registry containerd maps to the local one", () => {
    expect(imageRef("sandbox-a")).toBe(`${IMAGE_REGISTRY}/agentbox/sandbox-a:1`);
    expect(IMAGE_REGISTRY).toBe("registry.agentbox.test");
  });
});
