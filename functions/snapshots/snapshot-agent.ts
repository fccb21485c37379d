import { RESOURCE } from "../../lib/crd/keys.ts";
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import type { KubeClient } from "../../lib/kube/client.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import type { KubeWatchTransport } from "../../lib/kube/transport.ts";
import {
  type CommittedImage,
  commitBudgetMs,
  commitFailure,
  commitStillWanted,
  committedStatus,
  failedStatus,
  imageCreated,
  leftBehind,
  mustEmptyRepositories,
  snapshotRepositories,
  snapshotWork,
  withoutFinalizer,
  withoutStale,
} from "../../lib/snapshots/agent-work.ts";
import { snapshotTarget } from "../../lib/snapshots/image-names.ts";
import type { Log } from "../../lib/util/log.ts";
import { Informer } from "../cache/informer.ts";
import type { Committer } from "./committer.ts";
import { KeyedWork } from "./keyed-work.ts";
import { removeEach } from "./remove-each.ts";

/** COMMIT_TIMEOUT_MS bounds one container's commit (its diff, push and manifest) by default. */
export const COMMIT_TIMEOUT_MS = 10 * 60_000;
/** REMOVE_TIMEOUT_MS bounds one image's deletion (or one repository's emptying) by default. */
export const REMOVE_TIMEOUT_MS = 60_000;
/** BRIEF_SWEEP_MS bounds the one try at emptying the repositories of a failed snapshot that records no image. */
const BRIEF_SWEEP_MS = 10_000;
/** STEPS_PER_RUN bounds one key's decide → act rounds (each act changes the object, so few are needed). */
const STEPS_PER_RUN = 8;

/** SnapshotAgentOptions: the apiserver, which snapshots are this agent's, the runtime backend, the registry name. */
export interface SnapshotAgentOptions {
  kube: KubeClient;
  /** watch streams the informer's watches (nodeKubeWatch). */
  watch: KubeWatchTransport;
  /** fieldSelector picks this agent's snapshots: `spec.source.node=<node>` (or `!=` for all kwok nodes). */
  fieldSelector: string;
  committer: Committer;
  /** registry is the snapshot images' registry name (`registry.agentbox.test`). */
  registry: string;
  log: Log;
  now: () => Date;
  commitTimeoutMs?: number;
  removeTimeoutMs?: number;
  /** parallel is how many snapshots are worked on at once (4). */
  parallel?: number;
  /** retryMs are the pauses before a snapshot whose work failed is tried again (tests shorten them). */
  retryMs?: readonly number[];
}

/** SnapshotAgent runs until stop; idle resolves when no snapshot is being worked on (tests). */
export interface SnapshotAgent {
  stop(): Promise<void>;
  idle(): Promise<void>;
}

/** Pushed holds a commit whose status was not written yet, so a retry writes it instead of committing again. */
interface Pushed {
  /** uid of the object it was pushed for (a snapshot deleted and made again under its name is another). */
  uid: string;
  generation: number;
  images: Record<string, CommittedImage>;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * startSnapshotAgent runs a node's snapshot agent (ADR 0045): one informer of the SandboxSnapshots
 * its field selector picks, and for each, serialised per object and a few at once, what
 * lib/snapshots/agent-work.ts decides from a fresh read: commit spec.source (each container to its
 * `g<generation>` image) and write Committed or Failed; delete the images an earlier pause left
 * once the sandbox is paused again; delete every image of a deleted snapshot and empty its
 * repositories (what was pushed and never recorded goes too), then remove its finalizer.
 * Every write is a PUT preconditioned on the version read; a conflict reads again and decides
 * again, and a commit already pushed is written onto the newer object rather than made twice.
 */
export function startSnapshotAgent(opts: SnapshotAgentOptions): SnapshotAgent {
  const { kube, committer, log } = opts;
  const commitMs = opts.commitTimeoutMs ?? COMMIT_TIMEOUT_MS;
  const removeMs = opts.removeTimeoutMs ?? REMOVE_TIMEOUT_MS;
  const pushed = new Map<string, Pushed>();
  const bounded = (signal: AbortSignal, ms: number) => AbortSignal.any([signal, AbortSignal.timeout(ms)]);

  /** remove deletes images, each bounded; it answers the ones it could not delete. */
  const remove = (images: Record<string, string>, signal: AbortSignal) =>
    removeEach(committer, log, "image", images, signal, removeMs);

  /**
   * commitAll commits every container of spec.source; a failure says which container and why. A
   * commit cut short by the pause's deadline (commitBudgetMs) is `overdue`: the hosts abandon that
   * pause whatever the agent answers, so it answers nothing and leaves nothing pushed.
   */
  async function commitAll(s: SandboxSnapshot, generation: number, signal: AbortSignal) {
    const namespace = s.metadata?.namespace ?? "";
    const images: Record<string, CommittedImage> = {};
    for (const container of s.spec.source.containers) {
      const budget = commitBudgetMs(s, opts.now(), commitMs);
      const within = bounded(signal, Math.max(0, budget));
      try {
        if (budget <= 0) throw new Error("the pause's deadline passed");
        const target = snapshotTarget(opts.registry, namespace, s.spec.sandboxId, container.name, generation);
        images[container.name] = await committer.commit(
          {
            namespace,
            sandboxId: s.spec.sandboxId,
            source: s.spec.source,
            container,
            target,
            created: imageCreated(s),
          },
          within,
        );
      } catch (e) {
        if (signal.aborted) throw e;
        // The containers pushed before this one belong to nobody now (nor what they replaced).
        await remove(leftBehind(s, images, true), signal);
        const { overdue, why } = commitFailure({
          budgetMs: budget,
          limitMs: commitMs,
          aborted: within.aborted,
          error: message(e),
          ...(s.spec.source.commitUntil ? { commitUntil: String(s.spec.source.commitUntil) } : {}),
        });
        return {
          ok: false as const,
          overdue,
          message: `commit of container ${container.name} failed: ${why}`,
        };
      }
    }
    return { ok: true as const, images };
  }

  /**
   * commit commits one generation (or takes the push a failed write left) and writes its outcome,
   * onto a newer object if the first write conflicts and that generation is still the one asked for.
   */
  async function commit(key: string, first: SandboxSnapshot, generation: number, signal: AbortSignal) {
    const namespace = first.metadata?.namespace ?? "";
    const name = first.metadata?.name ?? "";
    const kept = pushed.get(key);
    let outcome: Awaited<ReturnType<typeof commitAll>>;
    const uid = first.metadata?.uid ?? "";
    if (kept?.generation === generation && kept.uid === uid) outcome = { ok: true, images: kept.images };
    else {
      log.info({ snapshot: key, generation }, "committing a snapshot");
      const started = Date.now();
      outcome = await commitAll(first, generation, signal);
      if (outcome.ok) {
        pushed.set(key, { uid, generation, images: outcome.images });
        log.info({ snapshot: key, generation, ms: Date.now() - started }, "snapshot committed");
      } else log.warn({ snapshot: key, generation, err: outcome.message }, "snapshot commit failed");
    }
    // Past the pause's deadline the hosts abandon it: no answer to write, nothing was left pushed.
    if (!outcome.ok && outcome.overdue) return;
    let s: SandboxSnapshot | undefined = first;
    while (s && commitStillWanted(s, generation)) {
      const status = outcome.ok
        ? committedStatus(s, generation, outcome.images, opts.now())
        : failedStatus(s, generation, outcome.message);
      let written: SandboxSnapshot;
      try {
        written = await kube.replaceSnapshotStatus(namespace, { ...s, status });
      } catch (e) {
        if (isNotFound(e)) s = undefined;
        else if (isConflict(e)) s = await orMissing(kube.getSnapshot(namespace, name));
        else throw e;
        continue;
      }
      pushed.delete(key);
      // An earlier attempt's manifests this one re-tagged: untagged now, and nobody's.
      if (outcome.ok) await remove(leftBehind(written, outcome.images, false), signal);
      return;
    }
    // A newer generation, a deletion or the object gone: these images are nobody's (unless the
    // object records the same manifests: another agent's commit of this generation).
    pushed.delete(key);
    if (outcome.ok) {
      log.info({ snapshot: key, generation }, "snapshot changed during its commit; deleting what was pushed");
      await remove(leftBehind(s, outcome.images, true), signal);
    }
  }

  /** step does what one fresh read of the snapshot needs; false when nothing is left to do. */
  async function step(key: string, signal: AbortSignal): Promise<boolean> {
    const [namespace = "", name = ""] = key.split("/");
    const s = await orMissing(kube.getSnapshot(namespace, name));
    if (!s) {
      pushed.delete(key);
      return false;
    }
    const work = snapshotWork(s);
    switch (work.kind) {
      case "none":
        return false;
      case "commit":
        // Not begun past the pause's deadline: the hosts abandon it (the object changes then).
        if (commitBudgetMs(s, opts.now(), commitMs) <= 0) {
          log.info(
            { snapshot: key, generation: work.generation },
            "a commit past its pause's deadline is not begun",
          );
          return false;
        }
        await commit(key, s, work.generation, signal);
        return true;
      case "remove-stale": {
        if (work.foreign.length > 0)
          log.warn(
            { snapshot: key, keys: work.foreign },
            "stale images not of this sandbox: forgotten, not deleted",
          );
        const failed = await remove(work.images, signal);
        const removed = [...Object.keys(work.images).filter((k) => !failed.includes(k)), ...work.foreign];
        if (removed.length > 0)
          await kube
            .replaceSnapshotStatus(namespace, { ...s, status: withoutStale(s, removed) })
            .catch((e: unknown) => (isConflict(e) ? undefined : Promise.reject(e)));
        if (failed.length > 0) throw new Error(`could not delete ${failed.length} stale image(s)`);
        return true;
      }
      case "finalize": {
        const failed = await remove(Object.fromEntries(work.images.map((i) => [i, i])), signal);
        // Then every tagged manifest of its repositories: one pushed but never recorded (an agent
        // that died between its push and its status write) goes too.
        const repositories = Object.fromEntries(snapshotRepositories(s, opts.registry).map((r) => [r, r]));
        const sweep = (ms: number) => removeEach(committer, log, "repository", repositories, signal, ms);
        if (mustEmptyRepositories(s)) failed.push(...(await sweep(removeMs)));
        else if ((await sweep(BRIEF_SWEEP_MS)).length > 0)
          log.info({ snapshot: key }, "letting a failed snapshot go without emptying its repositories");
        if (failed.length > 0)
          throw new Error(`could not delete ${failed.length} image(s) or repositories of a deleted snapshot`);
        await kube
          .replaceSnapshot(namespace, withoutFinalizer(s))
          .catch((e: unknown) => (isConflict(e) ? undefined : orMissing(Promise.reject(e))));
        log.info({ snapshot: key }, "deleted a snapshot's images");
        return true;
      }
    }
  }

  const work = new KeyedWork(
    async (key, signal) => {
      for (let i = 0; i < STEPS_PER_RUN && !signal.aborted; i++) if (!(await step(key, signal))) return;
    },
    {
      parallel: opts.parallel ?? 4,
      ...(opts.retryMs ? { retryMs: opts.retryMs } : {}),
      failed: (key, e) =>
        log.warn({ snapshot: key, err: message(e) }, "snapshot agent work failed; trying again"),
    },
  );
  /** consider queues a snapshot the informer reports if, as reported, it needs anything. */
  const consider = (s: SandboxSnapshot) => {
    if (snapshotWork(s).kind !== "none") work.add(`${s.metadata?.namespace}/${s.metadata?.name}`);
  };
  const informer = new Informer<SandboxSnapshot>(
    { watch: opts.watch, log },
    {
      name: "snapshots",
      path: `/apis/agents.navix.sh/v1alpha1/${RESOURCE.SANDBOX_SNAPSHOTS}`,
      selector: { fieldSelector: opts.fieldSelector },
      // One page: a node's snapshots are few (listSnapshots takes no page size).
      list: () => kube.listSnapshots(undefined, { fieldSelector: opts.fieldSelector }),
    },
    { keep: false, relistAfterFailure: true },
  );
  informer.subscribe({
    listed: (objects) => {
      for (const s of objects) consider(s);
    },
    changed: (change) => {
      if (!change.deleted) consider(change.object);
    },
  });
  log.info({ fieldSelector: opts.fieldSelector, registry: opts.registry }, "snapshot agent started");
  return {
    stop: async () => {
      informer.close();
      await work.stop();
    },
    idle: async () => {
      await informer.firstSync;
      await work.idle();
    },
  };
}
