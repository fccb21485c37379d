// The test host's sandbox domain (AGENTBOX_SANDBOX_DOMAIN): `.test` is reserved (RFC 6761), so no
// request to it ever leaves the machine by accident.

/** TEST_SANDBOX_DOMAIN is the sandbox domain global-setup gives the test host. */
export const TEST_SANDBOX_DOMAIN = "sandbox.agentbox.test";
