/**
 * tar.ts writes a layer's tar archive deterministically: entries sorted by name (a parent sorts
 * before its children), one fixed mtime, numeric owners only (no user or group names), ustar
 * headers, and nothing of the machine that built it. Two builds from the same entries give the
 * same bytes, so the same layer digest. Regular files, directories and symbolic links are all an
 * image root filesystem needs here.
 */

/** LAYER_MTIME is every entry's modification time (2000-01-01T00:00:00Z): fixed, and not zero, which some tools read as unset. */
export const LAYER_MTIME = 946_684_800;

/** TarEntry is one member of a layer: a path relative to the root (no leading slash), its kind and owner. */
export type TarEntry =
  | { path: string; type: "dir"; mode: number; uid?: number; gid?: number }
  | { path: string; type: "file"; mode: number; data: Uint8Array; uid?: number; gid?: number }
  | { path: string; type: "symlink"; target: string; uid?: number; gid?: number };

const BLOCK = 512;

/** octal writes a number as zero-padded octal of width-1 digits and a NUL, as ustar wants. */
function octal(header: Uint8Array, offset: number, width: number, value: number): void {
  const text = value.toString(8);
  if (text.length > width - 1) throw new Error(`tar: ${value} does not fit a ${width}-byte field`);
  ascii(header, offset, width, `${text.padStart(width - 1, "0")}\0`);
}

function ascii(header: Uint8Array, offset: number, width: number, text: string): void {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > width) throw new Error(`tar: '${text}' does not fit a ${width}-byte field`);
  header.set(bytes, offset);
}

/** splitName fits a path into ustar's name (100 bytes) and prefix (155 bytes) fields. */
function splitName(name: string): { name: string; prefix: string } {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: "" };
  for (let i = name.lastIndexOf("/", name.length - 2); i > 0; i = name.lastIndexOf("/", i - 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { name: rest, prefix };
  }
  throw new Error(`tar: path '${name}' is too long for ustar`);
}

/** tarHeader is the 512-byte ustar header of an entry. */
export function tarHeader(entry: TarEntry): Uint8Array {
  if (entry.path.startsWith("/") || entry.path === "" || entry.path.split("/").includes(".."))
    throw new Error(`tar: '${entry.path}' must be a relative path without '..'`);
  const h = new Uint8Array(BLOCK);
  const { name, prefix } = splitName(entry.type === "dir" ? `${entry.path}/` : entry.path);
  ascii(h, 0, 100, name);
  octal(h, 100, 8, entry.type === "symlink" ? 0o777 : entry.mode & 0o7777);
  octal(h, 108, 8, entry.uid ?? 0);
  octal(h, 116, 8, entry.gid ?? 0);
  octal(h, 124, 12, entry.type === "file" ? entry.data.length : 0);
  octal(h, 136, 12, LAYER_MTIME);
  h.fill(0x20, 148, 156);
  ascii(h, 156, 1, entry.type === "file" ? "0" : entry.type === "symlink" ? "2" : "5");
  if (entry.type === "symlink") ascii(h, 157, 100, entry.target);
  ascii(h, 257, 8, "ustar\u000000");
  octal(h, 329, 8, 0);
  octal(h, 337, 8, 0);
  ascii(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  ascii(h, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return h;
}

/** sortEntries orders entries by path and refuses a path given twice. */
export function sortEntries(entries: readonly TarEntry[]): TarEntry[] {
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]?.path === sorted[i - 1]?.path) throw new Error(`tar: '${sorted[i]?.path}' given twice`);
  return sorted;
}

/**
 * tarChunks yields the archive of entries (sorted here) as chunks: each header, each file's data
 * padded to a block, then the two zero blocks that end an archive.
 */
export function* tarChunks(entries: readonly TarEntry[]): Generator<Uint8Array> {
  for (const entry of sortEntries(entries)) {
    yield tarHeader(entry);
    if (entry.type !== "file" || entry.data.length === 0) continue;
    yield entry.data;
    const pad = (BLOCK - (entry.data.length % BLOCK)) % BLOCK;
    if (pad) yield new Uint8Array(pad);
  }
  yield new Uint8Array(BLOCK * 2);
}
