/**
 * container-main.ts is envd inside a sandbox container (the images of infra/images/): one
 * sandbox whose root is the container's own `/`, so a file the SDK writes to /home/user/x is
 * /home/user/x in the container, and commands run as the container's user in its namespaces
 * (cwd /home/user). It looks nothing up in Kubernetes: a restarted container is a new process,
 * hence a fresh envd with no token, as a real envd. SIGTERM or SIGINT kills every process it
 * started and exits at once, so the container stops within its grace period. The image bundles
 * this file with esbuild; serve.ts keeps Kubernetes' client out of that bundle.
 *
 * Environment: ENVD_HOST (default 0.0.0.0), ENVD_PORT (default 49983, envd's port).
 */
import { serveEnvd } from "./serve.ts";

/** ENVD_PORT is the port a real envd listens on; the router and the SDK call it there. */
const ENVD_PORT = 49983;

/** main serves until a stop signal, then ends the sandbox's processes and exits 0. */
async function main(): Promise<void> {
  const port = Number(process.env.ENVD_PORT ?? ENVD_PORT);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`ENVD_PORT ${port} is not a port`);
  const envd = await serveEnvd({ host: process.env.ENVD_HOST ?? "0.0.0.0", port, root: "/" });
  const stop = (signal: NodeJS.Signals) => {
    // Process groups of the commands first: nothing of the sandbox outlives its envd.
    envd.kill();
    envd.server.closeAllConnections();
    envd.server.close();
    process.stdout.write(`envd: ${signal}, stopped\n`);
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  process.stdout.write(`envd: listening on ${envd.port}, root /\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`envd: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
