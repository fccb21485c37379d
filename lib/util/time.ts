// Timestamps as the control plane reads and writes them. Objects arrive in two shapes: Date
// when read through @kubernetes/client-node, RFC 3339 strings as raw JSON (our transport, audit
// events, a Worker's fetch), so every read goes through parseTime.

/**
 * parseTime turns a Date or an RFC 3339 string into a valid Date, or undefined for anything else
 * (absent, null, unparsable), so callers treat a garbled value like an absent one.
 */
export function parseTime(value: unknown): Date | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value;
  if (typeof value !== "string" || value === "") return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/**
 * rfc3339 formats a time the way Kubernetes writes metav1.Time and agentbox's Go components write
 * annotations (`time.RFC3339`): UTC, whole seconds, "Z", so values compare equal across both.
 */
export function rfc3339(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}
