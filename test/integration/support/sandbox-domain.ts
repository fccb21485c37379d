// The test host's sandbox domain (AGENTBOX_SANDBOX_DOMAIN), one of those a local cluster's host
// certificate covers (infra/cluster/sandbox-domains.ts).
export { TEST_SANDBOX_DOMAIN } from "../../../infra/cluster/sandbox-domains.ts";
