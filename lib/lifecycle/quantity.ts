// Kubernetes resource quantities (`100m`, `0.5`, `512Mi`, `1G`, `1e3`) summed for the history
// record. Parsed exactly with BigInt fractions, because float arithmetic turns `0.1` CPU into
// 100.00000000000001 millicores, which rounds up to 101 the way Kubernetes rounds.

/** Quantity is an exact non-negative-or-negative rational value: numerator / denominator. */
export interface Quantity {
  numerator: bigint;
  denominator: bigint;
}

const PATTERN = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(.*)$/;

/**
 * Suffix multipliers as [power of 10, power of 2], per k8s.io/apimachinery resource.Quantity. A
 * Map, so a suffix such as "constructor" finds nothing rather than Object.prototype's members.
 */
const SUFFIXES: ReadonlyMap<string, readonly [number, number]> = new Map([
  ["", [0, 0]],
  ["n", [-9, 0]],
  ["u", [-6, 0]],
  ["m", [-3, 0]],
  ["k", [3, 0]],
  ["M", [6, 0]],
  ["G", [9, 0]],
  ["T", [12, 0]],
  ["P", [15, 0]],
  ["E", [18, 0]],
  ["Ki", [0, 10]],
  ["Mi", [0, 20]],
  ["Gi", [0, 30]],
  ["Ti", [0, 40]],
  ["Pi", [0, 50]],
  ["Ei", [0, 60]],
]);

/**
 * parseQuantity reads a Kubernetes quantity: an optional sign, a decimal number, and a decimal
 * SI suffix (n u m k M G T P E), a binary suffix (Ki … Ei) or a decimal exponent (`e3`, `E-2`; at most three digits, which bounds the work).
 * Returns undefined for anything else (`1K`, `1.2.3`, `` ``, ` 1`), never throws.
 */
export function parseQuantity(text: string): Quantity | undefined {
  const match = PATTERN.exec(text);
  if (!match) return undefined;
  const [, sign = "", number = "", suffix = ""] = match;
  let pow10: number;
  let pow2: number;
  const known = SUFFIXES.get(suffix);
  if (known) [pow10, pow2] = known;
  else if (/^[eE][+-]?\d{1,3}$/.test(suffix)) [pow10, pow2] = [Number(suffix.slice(1)), 0];
  else return undefined;
  const [whole = "", fraction = ""] = number.split(".");
  let numerator = BigInt(`${whole}${fraction}` || "0") * 2n ** BigInt(pow2);
  let denominator = 1n;
  const exponent = pow10 - fraction.length;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator = 10n ** BigInt(-exponent);
  if (sign === "-") numerator = -numerator;
  return { numerator, denominator };
}

/** ceilDiv divides rounding towards +∞ (resource.Quantity rounds values up). */
function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b > 0n ? q + 1n : q;
}

/** quantityValue is the quantity in base units rounded up, like resource.Quantity.Value(). */
export function quantityValue(q: Quantity): number {
  return Number(ceilDiv(q.numerator, q.denominator));
}

/** quantityMilliValue is the quantity in thousandths rounded up, like MilliValue() (CPU millicores). */
export function quantityMilliValue(q: Quantity): number {
  return Number(ceilDiv(q.numerator * 1000n, q.denominator));
}
