// A supervised "thread" that is a child process: the same messages as a worker thread's, over the
// child's IPC channel. The host uses it where a thread needs V8 settings of its own (flags are
// per process): the sandbox router's heap is small and its garbage is a download's buffers, so it
// collects better with a collector tuned for that, which the control plane's heap must not get.
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * ThreadHandle is what superviseThread needs of a running thread: a worker_threads Worker, or a
 * ForkedThread.
 */
export interface ThreadHandle {
  postMessage(m: unknown): void;
  // biome-ignore lint/suspicious/noExplicitAny: the supervisor narrows the messages.
  on(event: "message", listener: (m: any) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  on(event: "exit", listener: (code: number) => void): unknown;
  terminate(): Promise<number>;
}

/** ForkedThread is a child process in a Worker's shape; pid is the child's. */
export interface ForkedThread extends ThreadHandle {
  readonly pid: number | undefined;
}

/** ignoreSendError: a send to a child that is going fails quietly; its exit event tells the supervisor. */
const ignoreSendError = () => {};

/** exitCode is a child's exit as a Worker reports one: its code, or 128 + the signal's number. */
function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };
  return 128 + (signal ? (numbers[signal] ?? 0) : 0);
}

/**
 * forkThread starts `url` as a child process with the host's Node flags and `nodeFlags`, and
 * hands it `data` (its workerData) when it says hello (child-port.ts openThreadPort): never in
 * its environment or arguments, where a secret in the settings would show. Messages use the
 * structured clone, as a Worker's do. terminate kills it (SIGKILL) and resolves with its exit code.
 */
export function forkThread(url: URL, data: unknown, nodeFlags: readonly string[]): ForkedThread {
  const child: ChildProcess = fork(fileURLToPath(url), [], {
    execArgv: [...process.execArgv, ...nodeFlags],
    serialization: "advanced",
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let exited: number | undefined;
  const exit = new Promise<number>((resolve) => {
    child.once("exit", (code, signal) => {
      exited = exitCode(code, signal);
      resolve(exited);
    });
    // A child that could not be started at all may never say "exit": it has no pid.
    child.once("error", () => {
      if (child.pid !== undefined || exited !== undefined) return;
      exited = 1;
      resolve(exited);
    });
  });
  const send = (m: unknown) => {
    // A child that is gone drops the message, as a terminated Worker does; its exit tells the rest.
    if (child.connected) child.send(m as object, ignoreSendError);
  };
  child.on("message", (m: { op?: string }) => {
    if (m?.op === "hello") send({ op: "thread-start", data });
  });
  return {
    get pid() {
      return child.pid;
    },
    postMessage: send,
    on(event: "message" | "error" | "exit", listener: (x: never) => void) {
      if (event === "exit") void exit.then(listener as (code: number) => void);
      else if (event === "message")
        child.on(
          "message",
          (m: { op?: string }) => m?.op !== "hello" && (listener as (m: unknown) => void)(m),
        );
      else child.on("error", listener as (err: Error) => void);
      return this;
    },
    terminate: async () => {
      if (exited === undefined) child.kill("SIGKILL");
      return exit;
    },
  };
}
