/**
 * rootfs.ts is the recipe of the sandbox images: what each layer holds and how each image runs.
 * Three kinds of layer, so the big one is stored and pulled once: `base` (busybox-static with its
 * applets in /bin, a /bin/bash for the SDK's `bash -l -c`, root and `user` (1000) accounts, /tmp,
 * the init and hold scripts), `runtime` (Node, exactly the glibc files it links, the envd bundle),
 * and a small top layer per image (its `/etc/agentbox-image` marker, and the web page). The
 * entries are pure data made from the input bytes, so equal inputs give equal layers.
 */

import { ENVD_PORT } from "../../lib/data-plane/sandbox-host.ts";
import type { RunSpec } from "./oci-layout.ts";
import type { TarEntry } from "./tar.ts";

/** WEB_PORT is the port the web image serves its page on. */
export const WEB_PORT = 8080;
/** IMAGE_NAMES are the images built here, each tagged IMAGE_TAG under `agentbox/`. */
export const IMAGE_NAMES = ["pause", "idle", "sandbox-a", "sandbox-b", "web", "chatty"] as const;
export type ImageName = (typeof IMAGE_NAMES)[number];
export const IMAGE_TAG = "1";

const USER_ID = 1000;
const NOBODY = 65534;
const text = (s: string) => new TextEncoder().encode(s);

/**
 * INIT_SCRIPT is PID 1 of the sandbox images: it runs its arguments as the main process, passes
 * TERM and INT on to it, reaps orphans (a waiting busybox shell reaps any child), and exits with
 * the main process's status, so the container stops as soon as envd does.
 */
const INIT_SCRIPT = `#!/bin/sh
# agentbox-init: PID 1. Runs "$@", forwards TERM/INT to it, reaps orphans, exits with its status.
trap 'kill -TERM "$main" 2>/dev/null' TERM
trap 'kill -INT "$main" 2>/dev/null' INT
"$@" &
main=$!
while :; do
  wait "$main"
  status=$?
  kill -0 "$main" 2>/dev/null || exit "$status"
done
`;

/** HOLD_SCRIPT holds forever doing nothing and exits 0 at once on TERM or INT (pause and idle). */
const HOLD_SCRIPT = `#!/bin/sh
# agentbox-hold: holds forever; exits 0 at once on TERM or INT.
trap 'exit 0' TERM INT
while :; do
  sleep 86400 &
  wait $!
done
`;

/** BASH_SCRIPT stands in for bash (busybox has none): ash takes the SDK's \`-l -c <cmd>\`. */
const BASH_SCRIPT = `#!/bin/sh
# /bin/bash stand-in: busybox ash, which reads /etc/profile and ~/.profile with -l.
exec /bin/sh "$@"
`;

const PROFILE = `export PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
`;

const dir = (path: string, mode = 0o755, uid = 0): TarEntry => ({
  path,
  type: "dir",
  mode,
  uid,
  gid: uid,
});
const file = (path: string, data: Uint8Array, mode = 0o644): TarEntry => ({ path, type: "file", mode, data });

/** baseLayer: busybox and its applets, accounts, home, /tmp, the scripts. */
export function baseLayer(busybox: Uint8Array, applets: readonly string[]): TarEntry[] {
  const links = applets
    .filter((a) => /^[A-Za-z0-9._[-]+$/.test(a) && a !== "busybox" && a !== "bash")
    .map((a): TarEntry => ({ path: `bin/${a}`, type: "symlink", target: "busybox" }));
  return [
    ...["bin", "dev", "etc", "home", "proc", "run", "sbin", "srv", "sys", "usr", "usr/bin", "var"].map((p) =>
      dir(p),
    ),
    dir("root", 0o700),
    dir("tmp", 0o1777),
    dir("var/tmp", 0o1777),
    dir("home/user", 0o755, USER_ID),
    file("bin/busybox", busybox, 0o755),
    ...links,
    file("bin/bash", text(BASH_SCRIPT), 0o755),
    { path: "usr/bin/env", type: "symlink", target: "/bin/busybox" },
    file("sbin/agentbox-init", text(INIT_SCRIPT), 0o755),
    file("sbin/agentbox-hold", text(HOLD_SCRIPT), 0o755),
    file(
      "etc/passwd",
      text(
        `root:x:0:0:root:/root:/bin/sh\nuser:x:${USER_ID}:${USER_ID}:user:/home/user:/bin/bash\nnobody:x:${NOBODY}:${NOBODY}:nobody:/nonexistent:/bin/false\n`,
      ),
    ),
    file("etc/group", text(`root:x:0:\nuser:x:${USER_ID}:\nnogroup:x:${NOBODY}:\n`)),
    file("etc/profile", text(PROFILE)),
  ];
}

/** RuntimeInputs are the runtime layer's files: Node, the glibc files it links (by path), envd. */
export interface RuntimeInputs {
  node: Uint8Array;
  /** libs: each absolute path the loader finds a library at (ldd's), with the file's bytes. */
  libs: readonly { path: string; data: Uint8Array }[];
  envd: Uint8Array;
}

/** runtimeLayer: /usr/local/bin/node, its libraries at their paths, /opt/envd/envd.mjs. */
export function runtimeLayer(inputs: RuntimeInputs): TarEntry[] {
  const dirs = new Set(["usr", "usr/local", "usr/local/bin", "opt", "opt/envd"]);
  const libs = inputs.libs.map((l) => {
    const path = l.path.replace(/^\/+/, "");
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
    return file(path, l.data, 0o755);
  });
  return [
    ...[...dirs].map((d) => dir(d)),
    file("usr/local/bin/node", inputs.node, 0o755),
    ...libs,
    file("opt/envd/envd.mjs", inputs.envd),
  ];
}

/** CHATTY_LOG_DIR is where the chatty image's talker appends its runtime log (a runtime's logDir). */
export const CHATTY_LOG_DIR = "/tmp/agentbox-runtime";

/**
 * CHATTER_SCRIPT talks, for the logs API's tests: every second a numbered line on the container's
 * log, every third a JSON warn line too, and a JSON line with its time appended to
 * CHATTY_LOG_DIR/runtime.log; each line names this container's start (`boot`, a random id), so a
 * test tells one container's lines from another's.
 */
const CHATTER_SCRIPT = `#!/bin/sh
# agentbox-chatter: a line a second on stdout and in ${CHATTY_LOG_DIR}/runtime.log, naming this start.
boot=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo "$$")
mkdir -p ${CHATTY_LOG_DIR}
n=0
while :; do
  n=$((n + 1))
  echo "tick $n boot=$boot"
  [ $((n % 3)) -eq 0 ] && printf '{"level":"warn","msg":"tock %s","boot":"%s"}\\n' "$n" "$boot"
  printf '{"time":"%s","msg":"runtime %s","boot":"%s"}\\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$n" "$boot" \\
    >>${CHATTY_LOG_DIR}/runtime.log
  sleep 1
done
`;

/** topLayer: the image's marker, for web its page, for chatty its talker. */
export function topLayer(name: ImageName): TarEntry[] {
  const entries = [dir("etc"), file("etc/agentbox-image", text(`${name}\n`))];
  if (name === "chatty")
    entries.push(dir("sbin"), file("sbin/agentbox-chatter", text(CHATTER_SCRIPT), 0o755));
  if (name === "web")
    entries.push(
      dir("srv"),
      dir("srv/www"),
      file(
        "srv/www/index.html",
        text("<!doctype html><title>agentbox web</title><p>agentbox web image</p>\n"),
      ),
    );
  return entries;
}

/** layersOf names the layers of an image, bottom first. */
export function layersOf(name: ImageName): ("base" | "runtime" | "top")[] {
  return name === "pause" || name === "idle" ? ["base", "top"] : ["base", "runtime", "top"];
}

const SANDBOX_PATH = "PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin";

/** runOf is how an image runs: pause and idle hold; the sandboxes run envd as user 1000 under agentbox-init. */
export function runOf(name: ImageName): RunSpec {
  const labels = { "sh.navix.agentbox.image": name };
  if (name === "pause" || name === "idle")
    return {
      user: `${NOBODY}:${NOBODY}`,
      env: [SANDBOX_PATH],
      entrypoint: ["/sbin/agentbox-hold"],
      workingDir: "/",
      labels,
    };
  const envd = ["/usr/local/bin/node", "/opt/envd/envd.mjs"];
  return {
    user: `${USER_ID}:${USER_ID}`,
    env: [
      SANDBOX_PATH,
      "HOME=/home/user",
      "USER=user",
      `ENVD_PORT=${ENVD_PORT}`,
      "ENVD_HOST=0.0.0.0",
      `AGENTBOX_IMAGE=${name}`,
    ],
    entrypoint:
      name === "chatty"
        ? ["/sbin/agentbox-init", "/bin/sh", "-c", `/sbin/agentbox-chatter & exec ${envd.join(" ")}`]
        : name === "web"
          ? [
              "/sbin/agentbox-init",
              "/bin/sh",
              "-c",
              `httpd -f -p ${WEB_PORT} -h /srv/www & exec ${envd.join(" ")}`,
            ]
          : ["/sbin/agentbox-init", ...envd],
    workingDir: "/home/user",
    exposedPorts: name === "web" ? [ENVD_PORT, WEB_PORT] : [ENVD_PORT],
    labels,
  };
}

/** parseLdd reads `ldd` output: the path of every library it resolved and of the loader, in order. */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const line of output.split("\n")) {
    const m = /=>\s+(\/\S+)\s+\(/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m?.[1] && !paths.includes(m[1])) paths.push(m[1]);
  }
  return paths;
}
