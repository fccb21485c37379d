// How long a paused sandbox is kept unresumed before it ends with its snapshot (ADR 0045): one
// setting of both hosts, AGENTBOX_SNAPSHOT_RETENTION_SECONDS on the Node host and
// SNAPSHOT_RETENTION_SECONDS on the Worker, read by one schema.
import * as v from "valibot";

/** DEFAULT_SNAPSHOT_RETENTION_SECONDS keeps a paused sandbox a week. */
export const DEFAULT_SNAPSHOT_RETENTION_SECONDS = 7 * 24 * 3600;

/**
 * SnapshotRetentionSetting reads the retention from the environment (a string): whole seconds,
 * at least a minute. Hosts default it to DEFAULT_SNAPSHOT_RETENTION_SECONDS.
 */
export const SnapshotRetentionSetting = v.pipe(
  v.string(),
  v.transform(Number),
  v.number("must be a number"),
  v.integer("must be a whole number of seconds"),
  v.minValue(60),
);
