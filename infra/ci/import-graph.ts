import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * ImportEdge is one relative import of one source file: `from` and `to` are paths relative to
 * the scanned root (e.g. `pool/render-pod.ts`), so a folder is the first path segment.
 */
export interface ImportEdge {
  from: string;
  to: string;
}

const IMPORT_SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'"`;]*?\sfrom\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/**
 * sourceFiles lists every `.ts` file under `root` (tests' `.test.ts` too), sorted; with `folders`,
 * only those under `root`'s folders of those names (so a repository root leaves node_modules out).
 */
export function sourceFiles(root: string, folders?: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts")) out.push(path);
    }
  };
  if (folders === undefined) walk(root);
  else for (const folder of folders) walk(join(root, folder));
  return out.sort();
}

/**
 * importEdges reads every relative import (static, type-only, re-export, dynamic) of the files
 * under `root` that lands inside `root`. A regex over the source is enough: the codebase spells
 * every import with its `.ts` extension, and biome keeps them on the usual forms.
 */
export function importEdges(root: string, folders?: readonly string[]): ImportEdge[] {
  const base = resolve(root);
  const edges: ImportEdge[] = [];
  for (const file of sourceFiles(base, folders)) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(IMPORT_SPECIFIER)) {
      const spec = match[1] ?? match[2];
      if (spec === undefined || !spec.startsWith(".")) continue;
      const target = resolve(dirname(file), spec);
      const to = relative(base, target);
      if (to.startsWith("..") || (folders !== undefined && !folders.includes(folderOf(to)))) continue;
      edges.push({ from: relative(base, file), to });
    }
  }
  return edges;
}

/** folderOf is a path's first segment, or `.` for a file at the root. */
export function folderOf(path: string): string {
  const slash = path.indexOf("/");
  return slash === -1 ? "." : path.slice(0, slash);
}

/** FolderGraph counts the imports between folders: `edges.get(a).get(b)` imports from a into b. */
export type FolderGraph = Map<string, Map<string, number>>;

/** folderGraph folds file imports into folder-to-folder counts, leaving out imports within a folder. */
export function folderGraph(edges: readonly ImportEdge[]): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const { from, to } of edges) {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a === b) continue;
    const row = graph.get(a) ?? new Map<string, number>();
    row.set(b, (row.get(b) ?? 0) + 1);
    graph.set(a, row);
  }
  return graph;
}

/**
 * stronglyConnected returns every group of two or more nodes that reach each other (Tarjan),
 * each sorted: a folder loop, or with file nodes, a file loop.
 */
export function stronglyConnected(
  nodes: Iterable<string>,
  next: (node: string) => Iterable<string>,
): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const other of next(node)) {
      if (!index.has(other)) {
        visit(other);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(other) ?? 0));
      } else if (onStack.has(other)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(other) ?? 0));
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop();
        if (member === undefined) break;
        onStack.delete(member);
        group.push(member);
      } while (member !== node);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const node of nodes) if (!index.has(node)) visit(node);
  return groups;
}

/** ImportCensus is what the layering check and the issue's note count. */
export interface ImportCensus {
  folders: number;
  /** distinct folder pairs with at least one import between them */
  folderPairs: number;
  /** file imports that cross a folder boundary */
  crossFolderImports: number;
  /** file imports that go from a lower layer to a higher one (needs `layers`) */
  upward: ImportEdge[];
  /** imports from a folder not named in `layers` */
  unlayered: string[];
  folderLoops: string[][];
  fileLoops: string[][];
}

/**
 * importCensus checks the files under `root` against `layers`, listed bottom first: a folder may
 * import only from its own layer's folders' lower layers, never from its own layer's siblings
 * (those would make a loop possible) nor from above. Root-level files count as folder `.`.
 */
export function importCensus(
  root: string,
  layers: readonly (readonly string[])[],
  folders?: readonly string[],
): ImportCensus {
  const scanned = folders;
  const edges = importEdges(root, scanned);
  const graph = folderGraph(edges);
  const layerOf = new Map<string, number>();
  layers.forEach((folders, i) => {
    for (const folder of folders) layerOf.set(folder, i);
  });
  const seen = new Set<string>();
  for (const { from, to } of edges) {
    seen.add(folderOf(from));
    seen.add(folderOf(to));
  }
  for (const file of sourceFiles(root, scanned)) seen.add(folderOf(relative(resolve(root), file)));
  const upward: ImportEdge[] = [];
  const unlayered = new Set<string>();
  for (const edge of edges) {
    const a = folderOf(edge.from);
    const b = folderOf(edge.to);
    if (a === b) continue;
    const la = layerOf.get(a);
    const lb = layerOf.get(b);
    if (la === undefined) unlayered.add(a);
    if (lb === undefined) unlayered.add(b);
    if (la !== undefined && lb !== undefined && lb >= la) upward.push(edge);
  }
  // A folder with no import across folders is still a folder of the tree: the list must name it.
  for (const folder of seen) if (!layerOf.has(folder)) unlayered.add(folder);
  const byFile = new Map<string, string[]>();
  for (const { from, to } of edges) byFile.set(from, [...(byFile.get(from) ?? []), to]);
  return {
    folders: seen.size,
    folderPairs: [...graph.values()].reduce((sum, row) => sum + row.size, 0),
    crossFolderImports: [...graph.values()].reduce(
      (sum, row) => sum + [...row.values()].reduce((s, n) => s + n, 0),
      0,
    ),
    upward,
    unlayered: [...unlayered].sort(),
    folderLoops: stronglyConnected(graph.keys(), (f) => graph.get(f)?.keys() ?? []),
    fileLoops: stronglyConnected(byFile.keys(), (f) => byFile.get(f) ?? []),
  };
}
