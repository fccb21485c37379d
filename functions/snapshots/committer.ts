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
}

/** CommitResult is a pushed snapshot image. */
export interface CommitResult {
  /** image: target@sha256:digest */
  image: string;
  /** bytes of the new layer */
  bytes: number;
}

/**
 * Committer turns a running container's filesystem changes into an image (the image it runs
 * with one layer more) in the cluster's registry, and deletes such images. Every call honours
 * the signal: an aborted commit pushes no manifest.
 */
export interface Committer {
  /** commit pushes the container's changes as `target` and answers the image by digest. */
  commit(req: CommitRequest, signal: AbortSignal): Promise<CommitResult>;
  /** remove deletes one snapshot image; an image already gone is not an error. */
  remove(image: string, signal: AbortSignal): Promise<void>;
}
