const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * parseGoDuration reads a Go/metav1.Duration string ("90s", "1m30s", "1.5h", "300ms") as
 * milliseconds; undefined when it is not one (the CRD pattern should have refused it already).
 */
export function parseGoDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  if (text === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let i = text.startsWith("-") || text.startsWith("+") ? 1 : 0;
  if (i === text.length) return undefined;
  while (i < text.length) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) return undefined;
    total += Number(m[1]) * (UNIT_MS[m[2] as string] ?? 0);
    i = re.lastIndex;
  }
  return text.startsWith("-") ? -total : total;
}
