/**
 * stand-in-committer.ts is the snapshot agent's backend on kwok (ADR 0045, issue #39): there is
 * no container runtime to commit a writable layer, so a pause commits what the envd stand-in
 * holds for the pod's IP, its directory, into the stand-in's snapshot store (snapshot-store.ts),
 * and a pod that later runs the image gets those files back (pods.ts). It answers as the
 * containerd backend does: `target@sha256:<digest>` and the bytes committed, and the same clear
 * error when the container to commit no longer serves the pod ("container ... of pod ... is
 * gone"), since a commit of the next sandbox's files would leak them to this one's owner, and
 * the same refusal of a pause past the layer limit (image-build.ts layerLimitError), counting
 * layers as the store does (a snapshot has its base's plus one).
 */
import type { CommitRequest, CommitResult, Committer } from "../../../functions/snapshots/committer.ts";
import { layerLimitError } from "../../../lib/snapshots/image-build.ts";
import { parseSnapshotRepository } from "../../../lib/snapshots/image-names.ts";
import type { StandInSnapshots } from "./serve.ts";

/** standInCommitter is a Committer over the envd stand-in's snapshots. */
export function standInCommitter(snapshots: StandInSnapshots): Committer {
  return {
    async commit(req: CommitRequest, signal: AbortSignal): Promise<CommitResult> {
      signal.throwIfAborted();
      const { source, container } = req;
      const pod = `${req.namespace}/${source.pod}`;
      if (!source.podIP)
        throw new Error(
          `pod ${pod} has no podIP in the snapshot's source: the envd stand-in finds a sandbox's files by its pod IP`,
        );
      const baseLayers = await snapshots.layers(container.image);
      const tooMany = layerLimitError(baseLayers, container.image);
      if (tooMany) throw new Error(tooMany);
      const out = await snapshots.commit(
        source.podIP,
        req.target,
        { podUID: source.podUID, container: container.name, containerID: container.containerID },
        baseLayers + 1,
      );
      if (!out.ok) throw new Error(`container ${container.containerID} of pod ${pod} is gone: ${out.reason}`);
      // An abort after the copy pushes nothing the caller learns of: the snapshot is dropped.
      if (signal.aborted) {
        await snapshots.remove(`${req.target}@${out.digest}`);
        signal.throwIfAborted();
      }
      return {
        image: `${req.target}@${out.digest}`,
        bytes: out.bytes,
        ...(out.replaced ? { replaced: `${req.target}@${out.replaced}` } : {}),
      };
    },
    async remove(image: string, signal: AbortSignal): Promise<void> {
      signal.throwIfAborted();
      await snapshots.remove(image);
    },
    async removeRepository(repository: string, signal: AbortSignal): Promise<void> {
      signal.throwIfAborted();
      // The containerd backend's guard: nothing outside agentbox-snapshots/ is emptied.
      parseSnapshotRepository(repository);
      await snapshots.removeRepository(repository);
    },
  };
}
