/**
 * canonicalJson is JSON.stringify with every object's keys sorted (recursively), so two values
 * that jsonEqual calls equal serialise to the same string, whatever order their keys came in:
 * the input of a stable hash. Like JSON.stringify, undefined members are left out. (Keys that
 * look like array indices come first, in numeric order: JavaScript objects keep them so.)
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Object.fromEntries(entries);
  });
}
