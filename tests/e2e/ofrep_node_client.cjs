// An OpenFeature server SDK for Node with the OFREP provider, neither written here, reading the flags of the
// API at argv[2]. Prints one JSON object: each evaluation's details (value, reason, variant, error code).
// Run by tests/e2e/test_ofrep_clients.py; the packages are devDependencies of package.json.
"use strict";

const { OpenFeature } = require("@openfeature/server-sdk");
const { OFREPProvider } = require("@openfeature/ofrep-provider");

async function main() {
  const baseUrl = process.argv[2];
  await OpenFeature.setProviderAndWait(new OFREPProvider({ baseUrl }));
  const client = OpenFeature.getClient();
  const context = { targetingKey: "node-user-1", plan: "pro" };
  const details = {
    bool: await client.getBooleanDetails("signup_enabled", false, context),
    integer: await client.getNumberDetails("api_rate_limit_per_minute", -1, context),
    float: await client.getNumberDetails("trace_sample_rate", -1),
    string: await client.getStringDetails("search_ranking", "none"),
    unknown: await client.getBooleanDetails("no_such_flag", true),
    mismatch: await client.getStringDetails("signup_enabled", "not-a-bool"),
  };
  const shown = {};
  for (const [name, detail] of Object.entries(details)) {
    shown[name] = {
      value: detail.value,
      reason: detail.reason,
      variant: detail.variant ?? null,
      errorCode: detail.errorCode ?? null,
      flagMetadata: detail.flagMetadata,
    };
  }
  process.stdout.write(JSON.stringify(shown) + "\n");
  await OpenFeature.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
