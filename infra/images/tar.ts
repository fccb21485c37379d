/**
 * tar.ts turns a layer's entries into its tar archive, deterministically, with tar-stream writing
 * the headers. What makes two builds give the same bytes (so the same layer digest) is decided
 * here: entries sorted by name (a parent sorts before its children), one fixed mtime, numeric
 * owners only (no user or group names), and every header field given, so tar-stream falls back
 * on none of its defaults (it would stamp "now" for a missing mtime, and 0644/0755 for a mode of
 * 0). Paths are ASCII and short here, so every header is plain ustar; a longer or non-ASCII name
 * would get a pax header, which carries only the name and is deterministic too. Regular files,
 * directories and symbolic links are all an image root filesystem needs here.
 */
import { Readable } from "node:stream";
import { type Header, pack } from "tar-stream";

/** LAYER_MTIME is every entry's modification time (2000-01-01T00:00:00Z): fixed, and not zero, which some tools read as unset. */
export const LAYER_MTIME = 946_684_800;

/** TarEntry is one member of a layer: a path relative to the root (no leading slash), its kind and owner. */
export type TarEntry =
  | { path: string; type: "dir"; mode: number; uid?: number; gid?: number }
  | { path: string; type: "file"; mode: number; data: Uint8Array; uid?: number; gid?: number }
  | { path: string; type: "symlink"; target: string; uid?: number; gid?: number };

/** MAX_ID is the largest owner id a ustar header holds (six octal digits); tar-stream writes 777777 for any larger. */
const MAX_ID = 0o777777;
const MTIME = new Date(LAYER_MTIME * 1000);

/** checkEntry refuses what would not extract where meant or what tar-stream would silently change. */
function checkEntry(entry: TarEntry): void {
  const { path } = entry;
  if (path.split("/").some((part) => part === "" || part === "." || part === ".."))
    throw new Error(`tar: '${path}' must be a relative path without '.', '..' or empty parts`);
  for (const id of [entry.uid ?? 0, entry.gid ?? 0])
    if (!Number.isInteger(id) || id < 0 || id > MAX_ID)
      throw new Error(`tar: '${path}': owner id ${id} out of range`);
  if (entry.type !== "symlink" && (entry.mode & 0o7777) === 0)
    throw new Error(`tar: '${path}': mode 0 (tar-stream would write its default mode instead)`);
}

/** sortEntries checks entries and orders them by path, refusing a path given twice. */
export function sortEntries(entries: readonly TarEntry[]): TarEntry[] {
  for (const entry of entries) checkEntry(entry);
  const sorted = [...entries].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]?.path === sorted[i - 1]?.path) throw new Error(`tar: '${sorted[i]?.path}' given twice`);
  return sorted;
}

/** headerOf is an entry's full tar-stream header: nothing left for tar-stream to default. */
function headerOf(entry: TarEntry): Header {
  const common = {
    mtime: MTIME,
    uid: entry.uid ?? 0,
    gid: entry.gid ?? 0,
    uname: "",
    gname: "",
    devmajor: 0,
    devminor: 0,
    linkname: "",
  };
  if (entry.type === "dir")
    return { ...common, name: `${entry.path}/`, type: "directory", mode: entry.mode & 0o7777, size: 0 };
  if (entry.type === "symlink")
    return { ...common, name: entry.path, type: "symlink", mode: 0o777, size: 0, linkname: entry.target };
  return {
    ...common,
    name: entry.path,
    type: "file",
    mode: entry.mode & 0o7777,
    size: entry.data.byteLength,
  };
}

/**
 * tarStream is the archive of entries (checked and sorted here, before it returns, so a bad entry
 * throws at once) as a byte stream. Entries are fed one at a time as the reader drains the
 * archive; a file's bytes are passed through as they are, never copied.
 */
export function tarStream(entries: readonly TarEntry[]): Readable {
  const sorted = sortEntries(entries);
  const archive = pack();
  const feed = async () => {
    for (const entry of sorted) {
      const header = headerOf(entry);
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error | null) => (err ? reject(err) : resolve());
        if (entry.type === "file") archive.entry(header, entry.data, done);
        else archive.entry(header, done);
      });
    }
    archive.finalize();
  };
  feed().catch((e: unknown) => archive.destroy(e instanceof Error ? e : new Error(String(e))));
  return Readable.from(archive, { objectMode: false });
}
