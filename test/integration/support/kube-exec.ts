// Running a command in a pod's container the way `kubectl exec` does: through the apiserver to
// the kubelet (on the real node, a process in the container's namespaces and cgroup).
import { Writable } from "node:stream";
import { Exec, type KubeConfig, type V1Pod, type V1Status } from "@kubernetes/client-node";

/** ExecResult is how a command run in a container ended, with what it wrote. */
export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * execIn runs `command` in `container` of `pod` and resolves with its exit code (the kubelet's
 * status: 0, else the ExitCode cause) and output. It rejects when the exec cannot start, ends
 * without an exit code, or gives no answer within `timeoutMs` (the socket is closed then).
 */
export function execIn(
  kc: KubeConfig,
  pod: V1Pod,
  container: string,
  command: string[],
  timeoutMs = 60_000,
): Promise<ExecResult> {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) =>
    new Writable({
      write(chunk, _enc, done) {
        into.push(String(chunk));
        done();
      },
    });
  const what = `exec ${JSON.stringify(command.join(" "))} in ${pod.metadata?.name}/${container}`;
  return new Promise<ExecResult>((resolve, reject) => {
    let socket: { close(): void } | undefined;
    const timer = setTimeout(() => {
      socket?.close();
      reject(new Error(`${what}: no answer in ${timeoutMs} ms`));
    }, timeoutMs);
    const finish = (status: V1Status) => {
      clearTimeout(timer);
      const code =
        status.status === "Success"
          ? 0
          : Number(status.details?.causes?.find((c) => c.reason === "ExitCode")?.message);
      if (!Number.isInteger(code)) reject(new Error(`${what}: ${JSON.stringify(status)}`));
      else resolve({ exitCode: code, stdout: out.join(""), stderr: err.join("") });
    };
    new Exec(kc)
      .exec(
        pod.metadata?.namespace ?? "",
        pod.metadata?.name ?? "",
        container,
        command,
        sink(out),
        sink(err),
        null,
        false,
        finish,
      )
      .then(
        (ws) => {
          socket = ws;
        },
        (e: unknown) => {
          clearTimeout(timer);
          reject(new Error(`${what}: ${String(e)}`));
        },
      );
  });
}
