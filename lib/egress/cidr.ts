// IP blocks as NetworkPolicy's ipBlock takes them: an IPv4 or IPv6 network in canonical form (host
// bits cleared, no leading zeros, IPv6 compressed as RFC 5952 writes it), so the apiserver's strict
// CIDR validation never refuses what a caller's rule became, and two spellings of one block compare
// equal.

/** Cidr is one IP block: its family, its network address as a number, and its prefix length. */
export interface Cidr {
  family: 4 | 6;
  /** network is the address with every host bit cleared. */
  network: bigint;
  prefix: number;
}

const BITS = { 4: 32, 6: 128 } as const;

/** parseV4 reads a dotted quad without leading zeros (the apiserver's strict form), else undefined. */
function parseV4(text: string): bigint | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
    n = (n << 8n) | BigInt(p);
  }
  return n;
}

/** parseV6 reads an IPv6 address (`::` compression, an embedded dotted quad at the end), else undefined. */
function parseV6(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (const [i, piece] of pieces.entries()) {
      if (piece.includes(".")) {
        const v4 = i === pieces.length - 1 ? parseV4(piece) : undefined;
        if (v4 === undefined) return undefined;
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) out.push(Number.parseInt(piece, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0] ?? "");
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if (!head || !tail) return undefined;
  // A dotted quad may only end the address, so in the head it must be the last group of all.
  if (halves.length === 2 && (halves[0] ?? "").includes(".")) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return all.reduce((n, g) => (n << 16n) | BigInt(g), 0n);
}

/**
 * parseCidr reads `a.b.c.d/n`, `x::y/n` or a bare address (a /32 or /128), or undefined when it is
 * neither (a domain name, a typo). Host bits are cleared: `8.8.8.8/24` is 8.8.8.0/24.
 */
export function parseCidr(text: string): Cidr | undefined {
  const [address = "", prefixText, ...rest] = text.trim().split("/");
  if (rest.length > 0) return undefined;
  const family: 4 | 6 = address.includes(":") ? 6 : 4;
  const value = family === 4 ? parseV4(address) : parseV6(address);
  if (value === undefined) return undefined;
  const bits = BITS[family];
  if (prefixText !== undefined && !/^(0|[1-9]\d{0,2})$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return undefined;
  const host = (1n << BigInt(bits - prefix)) - 1n;
  return { family, network: value & ~host, prefix };
}

/** formatV6 writes 8 groups in RFC 5952's form: lowercase, the longest run of zero groups (≥ 2) as `::`. */
function formatV6(n: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((n >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(":");
  if (best.len < 2) return hex(groups);
  return `${hex(groups.slice(0, best.at))}::${hex(groups.slice(best.at + best.len))}`;
}

/** formatCidr writes a block in canonical form, always with its prefix (`8.8.8.8/32`). */
export function formatCidr(c: Cidr): string {
  if (c.family === 6) return `${formatV6(c.network)}/${c.prefix}`;
  const octets = [24n, 16n, 8n, 0n].map((s) => String((c.network >> s) & 0xffn));
  return `${octets.join(".")}/${c.prefix}`;
}

/** contains says whether block `outer` holds all of `inner` (same family, shorter or equal prefix). */
export function contains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || outer.prefix > inner.prefix) return false;
  const shift = BigInt(BITS[outer.family] - outer.prefix);
  return inner.network >> shift === outer.network >> shift;
}

/** isWhole says whether a block is its family's whole address space (0.0.0.0/0, ::/0). */
export const isWhole = (c: Cidr) => c.prefix === 0;
