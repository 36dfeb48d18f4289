// The peer of bench_remote: @huggingface/hub's parseSafetensorsMetadata on the same test Hub.
// Usage: node peer.mjs HUB_URL ORG/NAME   (NODE_EXTRA_CA_CERTS trusts the test CA)
import { parseSafetensorsMetadata } from "@huggingface/hub";

const [hubUrl, repo] = process.argv.slice(2);
const start = performance.now();
const result = await parseSafetensorsMetadata({ repo, hubUrl });
const ms = performance.now() - start;
let tensors = 0;
for (const header of Object.values(result.headers ?? {})) {
  tensors += Object.keys(header).filter((k) => k !== "__metadata__").length;
}
console.log(JSON.stringify({ ms, shards: Object.keys(result.headers ?? {}).length, tensors }));
