import { rmSync } from "node:fs";
import { stopProcess } from "./processes.ts";
import { teardownRealNode } from "./real-node/teardown.ts";
import { clusterDir, readState } from "./state.ts";

/**
 * down stops exactly the processes `up` recorded for this cluster (newest first, so kwok and the
 * controllers go before the apiserver and etcd) and removes the cluster's state directory. A real
 * node goes first and completely: its containers, mounts, network and cgroups (teardown.ts).
 */
export async function down(name: string, log: (line: string) => void): Promise<void> {
  const state = readState(name);
  if (state?.realNode) await teardownRealNode(state.realNode, log);
  if (state) {
    for (const p of [...state.processes].reverse()) {
      await stopProcess(p.pid, state.dir);
      log(`stopped ${p.name} (pid ${p.pid})`);
    }
  }
  rmSync(clusterDir(name), { recursive: true, force: true });
  log(`cluster ${name} removed`);
}
