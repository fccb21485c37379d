// The real node's parts that come from Debian (issue #36): runc, the CNI plugins, the local
// registry, skopeo (pushes the images built here), busybox-static (their root filesystem) and
// iptables (portmap's hostPorts). The test preflight installs the missing ones, as it installs
// Chromium; kubelet and containerd are built from Go modules (infra/build/build-node-binaries.sh).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

/** NODE_PACKAGES maps each Debian package to a file that shows it is installed. */
export const NODE_PACKAGES: Readonly<Record<string, string>> = {
  runc: "/usr/sbin/runc",
  "containernetworking-plugins": "/usr/lib/cni/bridge",
  "docker-registry": "/usr/bin/docker-registry",
  skopeo: "/usr/bin/skopeo",
  "busybox-static": "/usr/bin/busybox",
  iptables: "/usr/sbin/iptables",
};

/**
 * ensureNodePackages installs (apt-get, as root) the Debian packages the real node needs and
 * are missing; it returns why it could not, with the fix, or nothing when all are there.
 */
export function ensureNodePackages(log: (line: string) => void): string | undefined {
  const missing = Object.entries(NODE_PACKAGES)
    .filter(([, file]) => !existsSync(file))
    .map(([pkg]) => pkg);
  if (missing.length === 0) return undefined;
  const fix = `apt-get install ${missing.join(" ")}`;
  if (process.getuid?.() !== 0)
    return `the real node needs Debian packages that are missing: ${fix} (as root)`;
  try {
    log(`installing Debian packages for the real node: ${missing.join(", ")} (apt-get)`);
    execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"], timeout: 300_000 });
    execFileSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      timeout: 600_000,
    });
  } catch (e) {
    return `installing ${missing.join(", ")} failed (${String(e)}): ${fix}`;
  }
  const still = Object.entries(NODE_PACKAGES).filter(([, file]) => !existsSync(file));
  return still.length ? `apt-get left ${still.map(([p]) => p).join(", ")} missing: ${fix}` : undefined;
}
