/**
 * pods.ts keeps the envd of each pod IP: the stand-in serves every kwok pod from one server and
 * tells them apart by the local address it was called on. A pod's envd starts as a real one
 * does: no access token, checking nothing, over a fresh directory (with `/home/user`) under the
 * server's temporary root, made on the first request that reaches it. `/init` follows envd's
 * rules (auth.ts checkInitToken): the first one sets the token, later ones must repeat it, so a
 * retried hook only replaces the env vars and nobody without the token can take the sandbox over.
 *
 * A real envd loses its token only by dying with its container, and every claim runs in a
 * container that never served (a reset restarts them, a new pod has new ones). The stand-in sees
 * that through `instanceOf` (pod-instances.ts: the pod's uid and sandbox container's ID): when an
 * /init finds the instance changed, the previous envd is gone (its processes killed, watchers
 * closed, directory removed) and the /init meets a fresh one. Without `instanceOf`, a pod's envd
 * never restarts.
 *
 * Snapshots (issue #39, kwok has no runtime to commit): with a SnapshotStore, `commit` copies a
 * pod's directory into the store as a snapshot image, and a fresh envd whose instance runs a
 * snapshot image (the lookup gives the sandbox container's image) starts over a copy of it.
 *
 * Shared (envd inside a container, container-main.ts): every address is the one sandbox, whose
 * root is the given directory (the container's `/`), never made nor removed by the stand-in.
 */
import { mkdir, realpath, rm } from "node:fs/promises";
import { join } from "node:path";
import { isSnapshotImage } from "../../../lib/snapshots/image-names.ts";
import { checkInitToken } from "./auth.ts";
import { type CommitSource, commitTake } from "./commit-check.ts";
import { HOME } from "./paths.ts";
import { ProcessTable } from "./processes.ts";
import type { SavedSnapshot, SnapshotStore } from "./snapshot-store.ts";

/** Limits bound what one sandbox may hold at once. */
export interface Limits {
  processes: number;
  watchers: number;
}

/** Sandbox is the state of the sandbox a pod serves. */
export interface Sandbox {
  /** token is envd's access token; "" until an /init sets one (then nothing is checked). */
  token: string;
  envVars: Record<string, string>;
  root: { dir: string; real: string };
  processes: ProcessTable;
  /** closers end the sandbox's open watch streams. */
  closers: Set<() => void>;
  watchers: number;
  limits: Limits;
}

/**
 * Instance is the container instance serving a pod IP: its id (`<pod uid>/<containerID>`), and,
 * when known, the envd container's name and the image its pod spec gives it.
 */
export interface Instance {
  id: string;
  container?: string;
  image?: string;
}

/**
 * InstanceLookup names the container instance that serves a pod IP now (undefined: unknown), so
 * a restarted container is told from the one an /init reached before. A bare string is an id.
 */
export type InstanceLookup = (ip: string) => Promise<string | Instance | undefined>;

export type { CommitSource } from "./commit-check.ts";

/** CommitOutcome is a commit's answer: the snapshot saved, or why its container is gone. */
export type CommitOutcome = ({ ok: true } & SavedSnapshot) | { ok: false; reason: string };

/** PodsOptions add snapshots to a (non-shared) Pods and say where it logs. */
export interface PodsOptions {
  snapshots?: SnapshotStore;
  /** log gets one line per notable event (a snapshot image the store does not hold); default stderr. */
  log?: (line: string) => void;
}

/** InitRequest is an /init body as read: "" is no token; envVars absent keeps the current ones. */
export interface InitRequest {
  accessToken: string;
  envVars?: Record<string, string>;
  /** timestampMs: the caller's clock; an /init not newer than the last applied one changes nothing. */
  timestampMs?: number;
}

/** InitOutcome is an /init's answer: applied (or skipped as stale), or refused with envd's status. */
export type InitOutcome = { ok: true; applied: boolean } | { ok: false; status: 401 | 500; reason: string };

/** PodEnvd is one pod's envd: its sandbox, the instance it runs as, its last /init's timestamp. */
interface PodEnvd {
  sandbox: Sandbox;
  instance: string | undefined;
  lastSetMs: number;
}

/** Pods maps pod IPs to their envd. */
export class Pods {
  private readonly byIp = new Map<string, PodEnvd>();
  /** locks chains the changes of one IP's envd (envd serialises /init too). */
  private readonly locks = new Map<string, Promise<unknown>>();
  private seq = 0;
  readonly tempRoot: string;
  readonly limits: Limits;
  private readonly instanceOf: InstanceLookup | undefined;
  /** shared: tempRoot is the root of the one sandbox every address reaches (not a parent of many). */
  private readonly shared: boolean;
  private readonly snapshots: SnapshotStore | undefined;
  private readonly log: (line: string) => void;
  constructor(
    tempRoot: string,
    limits: Limits,
    instanceOf?: InstanceLookup,
    shared = false,
    options: PodsOptions = {},
  ) {
    this.tempRoot = tempRoot;
    this.limits = limits;
    this.instanceOf = instanceOf;
    this.shared = shared;
    this.snapshots = shared ? undefined : options.snapshots;
    this.log = options.log ?? ((line) => process.stderr.write(`envd: ${line}\n`));
  }

  /** keyOf is the envd an address reaches: its own, or the one shared sandbox. */
  private keyOf(ip: string): string {
    return this.shared ? "" : ip;
  }

  /** of is the sandbox of the pod's envd, a fresh tokenless one if nothing reached it yet. */
  async of(address: string): Promise<Sandbox> {
    const ip = this.keyOf(address);
    const held = this.byIp.get(ip);
    if (held) return held.sandbox;
    return this.serial(ip, async () => {
      const now = this.byIp.get(ip);
      if (now) return now.sandbox;
      return (await this.fresh(ip, await this.lookup(ip))).sandbox;
    });
  }

  /**
   * current is the sandbox of the envd that serves the pod at address *now*: when the container
   * instance there changed since its envd's last /init (a new pod at a reused IP, a restarted
   * container), that envd is gone and a fresh, tokenless one answers, as a real envd would. It
   * reads the apiserver, so serve.ts asks only for a request the held envd would refuse.
   */
  current(address: string): Promise<Sandbox> {
    const ip = this.keyOf(address);
    return this.serial(ip, async () => {
      const instance = await this.lookup(ip);
      const held = this.byIp.get(ip);
      if (held && (instance === undefined || held.instance === undefined || held.instance === instance.id))
        return held.sandbox;
      return (await this.fresh(ip, instance)).sandbox;
    });
  }

  /**
   * init applies an /init as envd does: the token check first (a refusal changes nothing), then
   * a stale timestamp skips the update, else the env vars (when given) and token are set. Env
   * containing AGENTBOX_TEST_FAIL_INIT answers 500 after the check: a broken envd, for tests.
   */
  init(address: string, req: InitRequest): Promise<InitOutcome> {
    const ip = this.keyOf(address);
    return this.serial(ip, async (): Promise<InitOutcome> => {
      const instance = await this.lookup(ip);
      let envd = this.byIp.get(ip);
      if (!envd || (instance !== undefined && envd.instance !== undefined && envd.instance !== instance.id))
        envd = await this.fresh(ip, instance);
      else envd.instance ??= instance?.id;
      const refused = checkInitToken(envd.sandbox.token, req.accessToken);
      if (refused) return { ok: false, status: 401, reason: refused };
      if (req.envVars?.AGENTBOX_TEST_FAIL_INIT) return { ok: false, status: 500, reason: "init failed" };
      if (req.timestampMs !== undefined) {
        if (req.timestampMs <= envd.lastSetMs) return { ok: true, applied: false };
        envd.lastSetMs = req.timestampMs;
      }
      if (req.envVars) envd.sandbox.envVars = req.envVars;
      envd.sandbox.token = req.accessToken;
      return { ok: true, applied: true };
    });
  }

  /**
   * commit saves the directory of the envd serving ip as the snapshot image `target` of `layers`
   * layers, if the container a pause names still serves it (commit-check.ts). Serialised with
   * /init, so no fresh envd removes the directory mid-copy.
   */
  commit(address: string, target: string, source: CommitSource, layers = 1): Promise<CommitOutcome> {
    const store = this.snapshots;
    if (!store) return Promise.reject(new Error("this envd stand-in keeps no snapshots"));
    const ip = this.keyOf(address);
    return this.serial(ip, async (): Promise<CommitOutcome> => {
      const envd = this.byIp.get(ip);
      const checked = this.instanceOf !== undefined;
      const plan = commitTake(ip, envd, checked ? await this.lookup(ip) : undefined, source, checked);
      if (plan.take === "none") return { ok: false, reason: plan.reason };
      const dir = plan.take === "files" ? envd?.sandbox.root.dir : undefined;
      return {
        ok: true,
        ...(dir ? await store.save(dir, target, layers) : await store.saveEmpty(target, layers)),
      };
    });
  }

  /** snapshotLayers is how many layers an image has as the store counts them (SnapshotStore.layers). */
  snapshotLayers(image: string): Promise<number> {
    if (!this.snapshots) return Promise.reject(new Error("this envd stand-in keeps no snapshots"));
    return this.snapshots.layers(image);
  }

  /** removeSnapshot deletes a snapshot image from the store; one already gone is not an error. */
  async removeSnapshot(image: string): Promise<void> {
    if (!this.snapshots) throw new Error("this envd stand-in keeps no snapshots");
    await this.snapshots.remove(image);
  }

  /** removeSnapshotRepository deletes every snapshot image of a repository from the store. */
  async removeSnapshotRepository(repository: string): Promise<void> {
    if (!this.snapshots) throw new Error("this envd stand-in keeps no snapshots");
    await this.snapshots.removeRepository(repository);
  }

  /** killAll kills every sandbox's processes at once (synchronous: usable on process exit). */
  killAll(): void {
    for (const e of this.byIp.values()) e.sandbox.processes.killAll();
  }

  /** close ends every sandbox and removes the temporary root. */
  async close(): Promise<void> {
    const all = [...this.byIp.values()];
    this.byIp.clear();
    await Promise.all(all.map((e) => this.retire(e.sandbox)));
    if (!this.shared) await rm(this.tempRoot, { recursive: true, force: true });
  }

  /**
   * fresh starts a new envd on the pod (no token, an empty directory, or a copy of the snapshot
   * its instance's image names), retiring the previous one.
   */
  private async fresh(ip: string, instance: Instance | undefined): Promise<PodEnvd> {
    this.seq += 1;
    const dir = this.shared
      ? this.tempRoot
      : join(this.tempRoot, `${ip.replaceAll(/[^0-9A-Za-z.]/g, "_")}-${this.seq}`);
    if (!this.shared) {
      await mkdir(dir, { recursive: true });
      await this.restore(ip, instance?.image, dir).catch(async (e: unknown) => {
        await rm(dir, { recursive: true, force: true });
        throw e;
      });
      await mkdir(join(dir, HOME), { recursive: true });
    }
    const next: PodEnvd = {
      sandbox: {
        token: "",
        envVars: {},
        root: { dir, real: await realpath(dir) },
        processes: new ProcessTable(this.limits.processes),
        closers: new Set(),
        watchers: 0,
        limits: this.limits,
      },
      instance: instance?.id,
      lastSetMs: Number.NEGATIVE_INFINITY,
    };
    const previous = this.byIp.get(ip);
    this.byIp.set(ip, next);
    if (previous) await this.retire(previous.sandbox);
    return next;
  }

  /** retire ends a sandbox: its processes, its watchers, and its directory unless shared. */
  private async retire(s: Sandbox): Promise<void> {
    s.processes.killAll();
    for (const close of s.closers) close();
    if (!this.shared) await rm(s.root.dir, { recursive: true, force: true, maxRetries: 3 });
  }

  /**
   * restore fills a fresh directory from the snapshot image the instance runs, if it runs one.
   * One the store does not hold starts empty and is logged: a real node would fail the pull
   * (ErrImagePull), but kwok reports any image running, so the stand-in can only say so.
   */
  private async restore(ip: string, image: string | undefined, dir: string): Promise<void> {
    if (!image || !this.snapshots || !isSnapshotImage(image)) return;
    if (!(await this.snapshots.restore(image, dir)))
      this.log(
        `pod IP ${ip} runs snapshot image ${image}, which the stand-in does not hold: it starts empty`,
      );
  }

  /** lookup names the instance serving ip now; undefined when unknown (no lookup, or it failed). */
  private async lookup(ip: string): Promise<Instance | undefined> {
    if (!this.instanceOf) return undefined;
    const found = await this.instanceOf(ip).catch(() => undefined);
    return typeof found === "string" ? { id: found } : found;
  }

  /** serial runs fn after every earlier change of ip's envd has settled. */
  private serial<T>(ip: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.locks.get(ip) ?? Promise.resolve()).then(fn);
    const tail = run.catch(() => {});
    this.locks.set(ip, tail);
    void tail.then(() => {
      if (this.locks.get(ip) === tail) this.locks.delete(ip);
    });
    return run;
  }
}
