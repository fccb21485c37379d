// The snapshot agent's one dependency on a container runtime (ADR 0045): commit a running
// container's filesystem changes as an image, and delete such images. Each node kind has a
// backend (containerd on a real node, the envd stand-in's files on kwok); the agent's control
// flow (watch, commit, write status, delete stale images) is the same over all of them.
import type { SnapshotContainer, SnapshotSource } from "../../lib/crd/sandbox-snapshot.ts";

/** CommitRequest is one container of one pause: what to commit and where to push it. */
export interface CommitRequest {
  /** namespace of the SandboxSnapshot (the pool's). */
  namespace: string;
  /** sandboxId is the paused sandbox's id (the SandboxSnapshot's name). */
  sandboxId: string;
  /** source is the pod the pause commits (spec.source). */
  source: SnapshotSource;
  /** container is the one container of source to commit: its runtime id and the image it runs. */
  container: SnapshotContainer;
  /** target: repository:tag to push */
  target: string;
  /**
   * created is the time the image records as its creation (RFC 3339): the SandboxSnapshot's
   * creationTimestamp, the same for every attempt at a generation, never the clock, so a commit
   * retried over unchanged files pushes the same manifest as the attempt before it.
   */
  created: string;
}

/** CommitResult is a pushed snapshot image. */
export interface CommitResult {
  /** image: target@sha256:digest */
  image: string;
  /** bytes of the new layer */
  bytes: number;
  /**
   * replaced: `target@sha256:<digest>` of the manifest the target tag named before this push,
   * when it was another (an earlier attempt at this generation whose files have changed since:
   * no longer tagged, it is the caller's to delete once nothing records it).
   */
  replaced?: string;
}

/**
 * Committer turns a running container's filesystem changes into an image (the image it runs
 * with one layer more) in the cluster's registry, and deletes such images. Every call honours
 * the signal: an aborted commit pushes no manifest (one aborted after its push leaves it to the
 * finalization's removeRepository).
 */
export interface Committer {
  /** commit pushes the container's changes as `target` and answers the image by digest. */
  commit(req: CommitRequest, signal: AbortSignal): Promise<CommitResult>;
  /**
   * remove deletes one snapshot image; an image already gone is not an error. A registry that
   * does not allow deletes throws DeletesDisabled (as does removeRepository).
   */
  remove(image: string, signal: AbortSignal): Promise<void>;
  /**
   * removeRepository deletes every image of a snapshot repository
   * (`<registry>/agentbox-snapshots/...`, image-names.ts's snapshotRepository), recorded or not;
   * a repository that does not exist, or an image already gone, is not an error. It refuses any
   * other repository.
   */
  removeRepository(repository: string, signal: AbortSignal): Promise<void>;
}

/**
 * DeletesDisabled is a registry's refusal of every delete (405: distribution's storage.delete is
 * off). No retry changes it, so the agent forgets such an image rather than hold a snapshot's
 * stale images or its finalizer (and so the sandbox's next pause) until an operator acts; it says
 * so as an error naming the setting. The image stays in the registry.
 */
export class DeletesDisabled extends Error {
  constructor(registry: string) {
    super(
      `${registry} does not allow deletes (405): snapshot images stay in it until deletes are enabled ` +
        "(distribution: storage.delete.enabled, REGISTRY_STORAGE_DELETE_ENABLED=true)",
    );
    this.name = "DeletesDisabled";
  }
}
