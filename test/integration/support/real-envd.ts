// A tenant's hands inside a real container: the few envd calls the real-node tests make, straight
// on the wire (Connect over HTTP/1.1, JSON), so a test runs many short commands without a process
// per SDK call. The envd answering is the one inside the sandbox's container (infra/images).

/** EnvdTarget is one sandbox's envd: its address and its owner's access token. */
export interface EnvdTarget {
  url: string;
  token: string;
}

/** CommandResult is what one command printed and how it ended. */
export interface CommandResult {
  pid: number;
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
}

/** envdAt addresses a sandbox's envd on its pod IP at `port` (ENVD_PORT of the container). */
export function envdAt(podIP: string, port: number, token: string): EnvdTarget {
  return { url: `http://${podIP}:${port}`, token };
}

/** frame is one Connect envelope: a flags byte, a big-endian length, the JSON message. */
function frame(message: unknown): Buffer {
  const json = Buffer.from(JSON.stringify(message));
  const head = Buffer.alloc(5);
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

type StreamMessage = { event?: Record<string, Record<string, unknown>>; error?: { message?: string } };

/**
 * startStream sends process.Process/Start for `/bin/bash -l -c cmd` (as the e2b SDK does) and
 * hands each decoded stream message to `onMessage` until it returns true or the stream ends.
 */
async function startStream(
  t: EnvdTarget,
  cmd: string,
  timeoutMs: number,
  onMessage: (m: StreamMessage) => boolean,
): Promise<void> {
  const stop = new AbortController();
  const res = await fetch(`${t.url}/process.Process/Start`, {
    method: "POST",
    headers: { "content-type": "application/connect+json", "x-access-token": t.token },
    body: new Uint8Array(
      frame({ process: { cmd: "/bin/bash", args: ["-l", "-c", cmd], envs: {} }, stdin: false }),
    ),
    signal: AbortSignal.any([stop.signal, AbortSignal.timeout(timeoutMs)]),
  });
  if (res.status !== 200 || !res.body)
    throw new Error(`envd Start answered ${res.status}: ${await res.text()}`);
  let buf = Buffer.alloc(0);
  try {
    for await (const chunk of res.body) {
      buf = Buffer.concat([buf, Buffer.from(chunk)]);
      while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const len = buf.readUInt32BE(1);
        const message = JSON.parse(buf.subarray(5, 5 + len).toString()) as StreamMessage;
        buf = buf.subarray(5 + len);
        if (message.error) throw new Error(`envd Start failed: ${message.error.message ?? "unknown"}`);
        if (onMessage(message)) {
          stop.abort();
          return;
        }
      }
    }
  } catch (e) {
    if (stop.signal.aborted) return;
    throw e;
  }
}

/** envdRun runs `cmd` in the sandbox (as its user) and waits for it to end. */
export async function envdRun(t: EnvdTarget, cmd: string, timeoutMs = 30_000): Promise<CommandResult> {
  const out: CommandResult = { pid: 0, stdout: "", stderr: "", exitCode: undefined };
  await startStream(t, cmd, timeoutMs, ({ event }) => {
    if (event?.start) out.pid = Number(event.start.pid);
    const data = event?.data as { stdout?: string; stderr?: string } | undefined;
    if (data?.stdout) out.stdout += Buffer.from(data.stdout, "base64").toString();
    if (data?.stderr) out.stderr += Buffer.from(data.stderr, "base64").toString();
    if (event?.end) out.exitCode = Number(event.end.exitCode);
    return event?.end !== undefined;
  });
  return out;
}

/**
 * envdStartBackground starts `cmd` and leaves it running (the SDK's `background: true`): it
 * resolves with the pid envd gave once the process started, and drops the stream.
 */
export async function envdStartBackground(t: EnvdTarget, cmd: string, timeoutMs = 30_000): Promise<number> {
  let pid = 0;
  await startStream(t, cmd, timeoutMs, ({ event }) => {
    if (event?.start) pid = Number(event.start.pid);
    return pid > 0;
  });
  if (!pid) throw new Error(`envd never started ${JSON.stringify(cmd)}`);
  return pid;
}
