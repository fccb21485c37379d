import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";

/** CGROUP_MOUNT is where the cgroup hierarchies are mounted (v1 controllers and v2's unified tree). */
const CGROUP_MOUNT = "/sys/fs/cgroup";

/**
 * hierarchies lists the mounted cgroup hierarchies: each v1 controller's directory (and the
 * unified one of a hybrid host), or the root itself on a pure cgroup v2 host.
 */
function hierarchies(): string[] {
  if (existsSync(join(CGROUP_MOUNT, "cgroup.controllers"))) return [CGROUP_MOUNT];
  return readdirSync(CGROUP_MOUNT)
    .map((d) => join(CGROUP_MOUNT, d))
    .filter((d) => {
      try {
        return statSync(d).isDirectory() && readdirSync(d).some((f) => f.startsWith("cgroup."));
      } catch {
        return false;
      }
    });
}

/**
 * createCgroupRoot makes the kubelet's cgroup root (`/agentbox-<cluster>`) in every hierarchy:
 * the kubelet refuses a `cgroupRoot` that does not exist, and a root of its own keeps two local
 * clusters' kubelets from managing the same `kubepods` tree. A new v1 cpuset cgroup starts with
 * no CPUs or memory nodes, so those are copied from the parent.
 */
export function createCgroupRoot(name: string): void {
  for (const h of hierarchies()) {
    const dir = join(h, name);
    mkdirSync(dir, { recursive: true });
    for (const f of ["cpuset.cpus", "cpuset.mems"]) {
      const parent = join(h, f);
      const own = join(dir, f);
      if (existsSync(parent) && existsSync(own) && readFileSync(own, "utf8").trim() === "")
        writeFileSync(own, readFileSync(parent, "utf8"));
    }
  }
}

/**
 * removeCgroupTree removes the cgroup root and everything under it, deepest first, in every
 * hierarchy; it returns the directories that could not be removed (a process still in one).
 * Call it once every process of the node has ended.
 */
export function removeCgroupTree(name: string): string[] {
  const left: string[] = [];
  const remove = (dir: string): void => {
    let children: string[] = [];
    try {
      children = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => join(dir, e.name));
    } catch {
      return;
    }
    for (const c of children) remove(c);
    try {
      rmdirSync(dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") left.push(dir);
    }
  };
  for (const h of hierarchies()) remove(join(h, name));
  return left;
}

/** cgroupTreeExists says whether any hierarchy still has the cgroup root (a leak check for tests). */
export function cgroupTreeExists(name: string): boolean {
  return hierarchies().some((h) => existsSync(join(h, name)));
}
