// The baseline side of `npm run bench:compare`: a git worktree of the baseline commit under
// .scratch/ (gitignored), sharing this tree's node_modules when the lockfiles match, whose bench/
// holds this tree's bench code (the same measuring code on both sides), each import of product
// code pointed at where the baseline keeps that file. A bench file that cannot run there (an
// import with no counterpart, or a type error after the move) stays the baseline's own, and is
// named, so a comparison through it is not taken for one through the same code.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, posix } from "node:path";

/** BaselineTree is a prepared baseline worktree and what of this tree's bench code it could not take. */
export interface BaselineTree {
  dir: string;
  commit: string;
  /** kept: bench files left as the baseline's own (or left out), with why; their code differs from this tree's. */
  kept: Map<string, string>;
  /** notes: what preparing it did (reused, linked node_modules, imports moved), for the run's record. */
  notes: string[];
}

const git = (cwd: string, args: readonly string[]) =>
  execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
  });

/** filesUnder lists the files under dir (relative to `root`, posix separators); none when it is absent. */
function filesUnder(root: string, dir: string): string[] {
  const full = join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => posix.join(dir, posix.relative(full, join(e.parentPath, e.name)).split("\\").join("/")));
}

/** OUTSIDE matches a string literal naming a file outside bench/ (a "../" path with an extension): an import or a path of product code. */
const OUTSIDE = /"(\.\.\/[\w./-]+\.[a-z]+)"/g;

/**
 * rewriteImports points each "../…" path of a bench file at the baseline's file: kept when the
 * baseline has it, else through the renames between the two commits, else the baseline's one file
 * of the same name. Unresolved paths are returned, and then the file is not used.
 */
export function rewriteImports(
  file: string,
  source: string,
  exists: (path: string) => boolean,
  renamed: ReadonlyMap<string, string>,
  byName: ReadonlyMap<string, string[]>,
): { text: string; moved: string[]; unresolved: string[] } {
  const moved: string[] = [];
  const unresolved: string[] = [];
  const text = source.replace(OUTSIDE, (whole, spec: string) => {
    const target = posix.normalize(posix.join(posix.dirname(file), spec));
    if (exists(target)) return whole;
    const candidates = byName.get(basename(target)) ?? [];
    const old = renamed.get(target) ?? (candidates.length === 1 ? candidates[0] : undefined);
    if (old === undefined) {
      unresolved.push(target);
      return whole;
    }
    moved.push(`${target} → ${old}`);
    return `"${posix.relative(posix.dirname(file), old)}"`;
  });
  return { text, moved, unresolved };
}

/** benchClosure is the bench files `entry` loads (its "./…" imports and paths, transitively), itself included. */
export function benchClosure(repo: string, entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file) || !existsSync(join(repo, file))) return;
    seen.add(file);
    for (const m of readFileSync(join(repo, file), "utf8").matchAll(/"(\.\/[^"\s]+\.ts)"/g))
      visit(posix.normalize(posix.join(posix.dirname(file), m[1] as string)));
  };
  visit(entry);
  return seen;
}

/** ensureWorktree makes (or finds) the detached worktree of commit at dir. */
function ensureWorktree(repo: string, dir: string, commit: string, notes: string[]): void {
  if (existsSync(join(dir, ".git"))) {
    const head = git(dir, ["rev-parse", "HEAD"]).trim();
    if (head !== commit)
      throw new Error(`${dir} is a worktree of ${head}, not ${commit}: remove it (see docs/benchmarks.md)`);
    notes.push(`reused the worktree ${dir}`);
    return;
  }
  if (existsSync(dir)) throw new Error(`${dir} exists and is not a worktree: remove it first`);
  mkdirSync(dirname(dir), { recursive: true });
  // -f: a worktree registered at dir whose directory was deleted by hand is taken over.
  git(repo, ["worktree", "add", "-f", "--detach", dir, commit]);
  notes.push(`created the worktree ${dir} (git worktree add --detach)`);
}

/** linkModules gives the worktree this tree's node_modules when both lockfiles are the same. */
function linkModules(repo: string, dir: string, commit: string, notes: string[]): void {
  const link = join(dir, "node_modules");
  const isLink = existsSync(link) && lstatSync(link).isSymbolicLink();
  if (existsSync(link) && !isLink) return void notes.push("node_modules: the worktree's own install");
  const same =
    git(repo, ["show", `${commit}:package-lock.json`]) ===
    readFileSync(join(repo, "package-lock.json"), "utf8");
  if (!same)
    throw new Error(
      `the baseline's package-lock.json differs from this tree's: run \`npm ci\` in ${dir} (its node_modules is then used)`,
    );
  if (!isLink) symlinkSync(join(repo, "node_modules"), link, "dir");
  notes.push(`node_modules: a link to ${join(repo, "node_modules")} (the lockfiles are the same)`);
}

/** typeErrors type-checks the worktree's bench/ (and what it imports); the bench files with errors, and all error lines. */
function typeErrors(dir: string): { files: Set<string>; lines: string[] } {
  const config = join(dir, "tsconfig.bench-compare.json");
  writeFileSync(config, `${JSON.stringify({ extends: "./tsconfig.json", include: ["bench"] })}\n`);
  const tsc = join(dir, "node_modules", "typescript", "bin", "tsc");
  let out = "";
  try {
    execFileSync(process.execPath, [tsc, "-p", config, "--pretty", "false"], {
      cwd: dir,
      encoding: "utf8",
      stdio: "pipe",
    });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    out = `${err.stdout ?? ""}${err.stderr ?? ""}`;
  }
  const lines = out.split("\n").filter((l) => /error TS\d+/.test(l));
  if (out && lines.length === 0)
    throw new Error(`could not type-check the baseline's bench/: ${out.slice(0, 2000)}`);
  const files = new Set(lines.flatMap((l) => /^(bench\/\S+?\.ts)[(:]/.exec(l)?.[1] ?? []));
  return { files, lines };
}

/**
 * prepareBaseline makes the baseline worktree of `commit` under repo/.scratch/ ready to run this
 * tree's bench code: bench/ reset to the baseline's, then each of this tree's bench files copied
 * over with its product imports moved to the baseline's paths, then type-checked; a file that
 * fails goes back to the baseline's version (or out, when the baseline has none) until none fails.
 */
export function prepareBaseline(repo: string, commitish: string, log: (line: string) => void): BaselineTree {
  const commit = git(repo, ["rev-parse", "--verify", `${commitish}^{commit}`]).trim();
  const dir = join(repo, ".scratch", `bench-baseline-${commit.slice(0, 7)}`);
  const notes: string[] = [];
  ensureWorktree(repo, dir, commit, notes);
  linkModules(repo, dir, commit, notes);

  // bench/ back to the baseline's own files (a previous run's copy undone), nothing else touched.
  const baseBench = git(repo, ["ls-tree", "-r", "--name-only", commit, "bench/"]).split("\n").filter(Boolean);
  const original = (file: string) => git(repo, ["show", `${commit}:${file}`]);
  for (const file of filesUnder(dir, "bench")) if (!baseBench.includes(file)) rmSync(join(dir, file));
  for (const file of baseBench) writeFileSync(join(dir, file), original(file));

  const renamed = new Map<string, string>();
  const status = git(repo, ["diff", "-M", "--name-status", "-z", commit, "HEAD"]).split("\0");
  for (let i = 0; i < status.length; i++) {
    const kind = status[i] ?? "";
    if (kind.startsWith("R") || kind.startsWith("C")) {
      renamed.set(status[i + 2] ?? "", status[i + 1] ?? "");
      i += 2;
    } else if (kind) i += 1;
  }
  const byName = new Map<string, string[]>();
  for (const file of git(repo, ["ls-tree", "-r", "--name-only", commit]).split("\n").filter(Boolean))
    byName.set(basename(file), [...(byName.get(basename(file)) ?? []), file]);

  const kept = new Map<string, string>();
  const copied: string[] = [];
  for (const file of filesUnder(repo, "bench")) {
    const source = readFileSync(join(repo, file), "utf8");
    const { text, moved, unresolved } = rewriteImports(
      file,
      source,
      (p) => existsSync(join(dir, p)),
      renamed,
      byName,
    );
    if (unresolved.length > 0) {
      if (source !== (baseBench.includes(file) ? original(file) : undefined))
        kept.set(file, `no counterpart in the baseline for ${unresolved.join(", ")}`);
      continue;
    }
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
    copied.push(file);
    if (moved.length > 0) notes.push(`${file}: ${moved.join("; ")}`);
  }
  for (let pass = 1; pass <= 10; pass++) {
    const { files, lines } = typeErrors(dir);
    const reverting = [...files].filter((f) => copied.includes(f));
    if (reverting.length === 0) {
      if (lines.length > 0)
        notes.push(
          `type errors left in the baseline (not bench code this tree gave it):\n${lines.join("\n")}`,
        );
      break;
    }
    for (const file of reverting) {
      const why = lines
        .filter((l) => l.startsWith(file))
        .slice(0, 3)
        .join(" | ");
      kept.set(file, `type errors with this tree's code: ${why}`);
      copied.splice(copied.indexOf(file), 1);
      if (baseBench.includes(file)) writeFileSync(join(dir, file), original(file));
      else rmSync(join(dir, file));
    }
    log(`baseline: ${reverting.length} bench file(s) kept as the baseline's (type errors); checking again`);
  }
  notes.push(
    `bench/: ${copied.length} file(s) of this tree copied over the baseline's; ${kept.size} kept as the baseline's`,
  );
  const diffs = [...kept.keys()].map((file) => keptDiff(repo, dir, file));
  writeFileSync(join(dir, "bench-kept.diff"), diffs.join(""));
  if (kept.size > 0) notes.push(`what the kept files differ in: ${join(dir, "bench-kept.diff")}`);
  return { dir, commit, kept, notes };
}

/** keptDiff is the diff from the baseline's bench file (as run) to this tree's, read-only (git diff --no-index). */
function keptDiff(repo: string, dir: string, file: string): string {
  const ours = join(dir, file);
  try {
    git(repo, ["diff", "--no-index", "--", existsSync(ours) ? ours : "/dev/null", join(repo, file)]);
    return "";
  } catch (e) {
    return (e as { stdout?: string }).stdout ?? "";
  }
}
