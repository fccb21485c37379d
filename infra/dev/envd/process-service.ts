/**
 * process-service.ts serves `process.Process`: Start and Connect stream a process's events
 * (`start` with the pid first, then `data`, then `end`), List, SendInput, SendSignal,
 * CloseStdin and Update answer at once. Commands run with the sandbox's /init env vars plus
 * the request's, in the sandbox's home or the `cwd` asked for (confined to the sandbox).
 */
import { stat } from "node:fs/promises";
import { RpcError } from "./connect.ts";
import { bytes, obj, type ProcessEvent, processConfig, selector, signalOf, str } from "./messages.ts";
import { HOME, hostPath, resolve, USER } from "./paths.ts";
import type { Sandbox } from "./pods.ts";
import type { Proc } from "./processes.ts";
import type { Method, StreamContext } from "./rpc.ts";

type Msg = Record<string, unknown>;

/** attach streams a process's events until it ends or the stream does. */
function attach(proc: Proc, ctx: StreamContext): Promise<void> {
  return new Promise<void>((done) => {
    const listener = (ev: ProcessEvent) => {
      ctx.send({ event: ev });
      if ("end" in ev) finish();
    };
    const finish = () => {
      proc.subscribers.delete(listener);
      done();
    };
    proc.subscribers.add(listener);
    ctx.send({ event: { start: { pid: proc.pid } } });
    ctx.signal.addEventListener("abort", finish, { once: true });
  });
}

/** environment is what a command sees: PATH, HOME, USER, the /init env vars, the request's. */
function environment(sbx: Sandbox, envs: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: hostPath(sbx.root.dir, HOME),
    USER,
    LOGNAME: USER,
    ...sbx.envVars,
    ...envs,
  };
}

async function start(sbx: Sandbox, msg: Msg, ctx: StreamContext): Promise<void> {
  const config = processConfig(msg);
  const pty = obj(msg, "pty");
  const tag = str(msg, "tag");
  const { host } = await resolve(sbx.root, config.cwd ?? HOME);
  const st = await stat(host).catch(() => undefined);
  if (!st?.isDirectory())
    throw new RpcError("invalid_argument", `cwd '${config.cwd ?? HOME}' does not exist`);
  const proc = sbx.processes.start({
    config,
    ...(tag !== undefined ? { tag } : {}),
    stdin: msg.stdin !== false,
    pty: pty !== undefined,
    cwd: host,
    env: environment(sbx, pty ? { TERM: "xterm-256color", ...config.envs } : config.envs),
    ...(ctx.timeoutMs ? { timeoutMs: ctx.timeoutMs } : {}),
  });
  await attach(proc, ctx);
}

async function connect(sbx: Sandbox, msg: Msg, ctx: StreamContext): Promise<void> {
  await attach(sbx.processes.find(selector(msg)), ctx);
}

const KEEPALIVE = { event: { keepalive: {} } };

/** processMethods are the `process.Process` RPCs, by path. */
export const processMethods: Record<string, Method> = {
  "/process.Process/Start": { kind: "server_streaming", keepalive: KEEPALIVE, handle: start },
  "/process.Process/Connect": { kind: "server_streaming", keepalive: KEEPALIVE, handle: connect },
  "/process.Process/List": {
    kind: "unary",
    handle: async (sbx) => ({ processes: sbx.processes.list() }),
  },
  "/process.Process/SendInput": {
    kind: "unary",
    handle: async (sbx, msg) => {
      const input = obj(msg, "input") ?? {};
      const kind = input.pty !== undefined ? "pty" : "stdin";
      await sbx.processes.input(selector(msg), bytes(input, kind), kind);
      return {};
    },
  },
  "/process.Process/SendSignal": {
    kind: "unary",
    handle: async (sbx, msg) => {
      sbx.processes.signal(selector(msg), signalOf(msg));
      return {};
    },
  },
  "/process.Process/CloseStdin": {
    kind: "unary",
    handle: async (sbx, msg) => {
      sbx.processes.closeStdin(selector(msg));
      return {};
    },
  },
  "/process.Process/Update": {
    kind: "unary",
    handle: async (sbx, msg) => {
      // A resize: script(1)'s terminal keeps its size, so the stand-in only checks the target.
      const proc = sbx.processes.find(selector(msg));
      if (!proc.pty) throw new RpcError("invalid_argument", "the process has no PTY to resize");
      return {};
    },
  },
};
