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
import { LAYER_MTIME, type TarEntry, tarChunks, tarHeader } from "../../infra/images/tar.ts";

// The image builder's pure parts (infra/images/): the deterministic tar writer, the OCI documents,
// and the recipe (which layer holds what, how each image runs).

const bytes = (s: string) => new TextEncoder().encode(s);
const archive = (entries: TarEntry[]) => Buffer.concat([...tarChunks(entries)]);
const field = (h: Uint8Array, at: number, width: number) =>
  Buffer.from(h.subarray(at, at + width))
    .toString("latin1")
    .replace(/\0.*$/s, "");

/** members reads back a ustar archive's (name, type, mode, uid, size) by its headers alone. */
function members(tar: Buffer): { name: string; type: string; mode: number; uid: number; size: number }[] {
  const out = [];
  for (let at = 0; at + 512 <= tar.length; ) {
    const h = tar.subarray(at, at + 512);
    if (h.every((b) => b === 0)) break;
    const prefix = field(h, 345, 155);
    const size = Number.parseInt(field(h, 124, 12), 8);
    out.push({
      name: (prefix ? `${prefix}/` : "") + field(h, 0, 100),
      type: field(h, 156, 1),
      mode: Number.parseInt(field(h, 100, 8), 8),
      uid: Number.parseInt(field(h, 108, 8), 8),
      size,
    });
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe("the layer tar writer", () => {
  const entries: TarEntry[] = [
    { path: "etc/passwd", type: "file", mode: 0o644, data: bytes("root:x:0:0::/:/bin/sh\n") },
    { path: "home/user", type: "dir", mode: 0o755, uid: 1000, gid: 1000 },
    { path: "bin/sh", type: "symlink", target: "busybox" },
    { path: "etc", type: "dir", mode: 0o755 },
    { path: "bin", type: "dir", mode: 0o755 },
    { path: "home", type: "dir", mode: 0o755 },
  ];

  it("writes the same bytes whatever order the entries come in, parents before children", () => {
    const a = archive(entries);
    expect(a.equals(archive([...entries].reverse()))).toBe(true);
    expect(sha256(a)).toBe(sha256(archive(entries)));
    expect(members(a).map((m) => m.name)).toEqual([
      "bin/",
      "bin/sh",
      "etc/",
      "etc/passwd",
      "home/",
      "home/user/",
    ]);
    expect(a.length % 512).toBe(0);
  });

  it("keeps numeric owners, modes, one fixed mtime and a valid checksum in every header", () => {
    const h = tarHeader({ path: "tmp", type: "dir", mode: 0o1777 });
    expect(Number.parseInt(field(h, 100, 8), 8)).toBe(0o1777);
    expect(Number.parseInt(field(h, 136, 12), 8)).toBe(LAYER_MTIME);
    expect(field(h, 265, 32)).toBe("");
    let sum = 0;
    h.forEach((b, i) => {
      sum += i >= 148 && i < 156 ? 0x20 : b;
    });
    expect(Number.parseInt(field(h, 148, 8), 8)).toBe(sum);
    expect(members(archive(entries)).find((m) => m.name === "home/user/")).toMatchObject({
      uid: 1000,
      type: "5",
    });
  });

  it("is read back by tar(1) with the same names, owners and contents", () => {
    const listed = spawnSync("tar", ["-tv", "--numeric-owner", "-f", "-"], {
      input: archive(entries),
      encoding: "utf8",
    });
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/lrwxrwxrwx 0\/0 +0 2000-01-01 00:00 bin\/sh -> busybox/);
    expect(listed.stdout).toMatch(/drwxr-xr-x 1000\/1000 +0 2000-01-01 00:00 home\/user\//);
    const cat = spawnSync("tar", ["-xOf", "-", "etc/passwd"], { input: archive(entries), encoding: "utf8" });
    expect(cat.stdout).toBe("root:x:0:0::/:/bin/sh\n");
  });

  it("splits a long path into ustar's prefix, and refuses absolute, climbing or repeated paths", () => {
    const long = `${"d".repeat(80)}/${"e".repeat(80)}/f`;
    const m = members(archive([{ path: long, type: "file", mode: 0o644, data: bytes("x") }]));
    expect(m[0]?.name).toBe(long);
    expect(() => tarHeader({ path: "/etc", type: "dir", mode: 0o755 })).toThrow(/relative/);
    expect(() => tarHeader({ path: "a/../b", type: "dir", mode: 0o755 })).toThrow(/relative/);
    expect(() => archive([entries[0] as TarEntry, entries[0] as TarEntry])).toThrow(/twice/);
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
