// A host's claims carry its name in a label (CLAIMED_BY_LABEL) so the host's watch of the pods its
// creates wait for selects only those (ADR 0037). The name is the host's instance id
// (AGENTBOX_INSTANCE_ID, default the hostname), which need not be a valid label value: a long
// FQDN, or one with characters a label refuses, is written as a short stable hash instead.

import { isLabelValue } from "../kube/label-value.ts";
import { sha256Hex } from "../util/sha256.ts";

/** HASHED_PREFIX starts the hashed form, so an operator reading a pod sees that it is one. */
const HASHED_PREFIX = "h-";

/** HASHED_DIGITS is how many hex digits of the SHA-256 the hashed form keeps (64 bits). */
const HASHED_DIGITS = 16;

/**
 * claimedByValue is the CLAIMED_BY_LABEL value of a host with instance id `instance`: the id itself
 * when it is a valid label value, else `h-` and 16 hex digits of its SHA-256 (the same id always
 * gives the same value, in every host). Undefined for a host without an id (or an empty one): its
 * claims carry no label. Two hosts whose values collide only receive each other's events, as
 * every host did before the label.
 */
export function claimedByValue(instance: string | undefined): string | undefined {
  if (instance === undefined || instance === "") return undefined;
  if (isLabelValue(instance)) return instance;
  return `${HASHED_PREFIX}${sha256Hex(instance).slice(0, HASHED_DIGITS)}`;
}
