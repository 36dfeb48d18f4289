// The GGUF peer of bench_remote: @huggingface/gguf's ggufAllShards on the same test Hub, every part of a split.
// Usage: node gguf.mjs URL_OF_THE_FIRST_PART   (NODE_EXTRA_CA_CERTS trusts the test CA)
import { ggufAllShards } from "@huggingface/gguf";

const [url] = process.argv.slice(2);
const start = performance.now();
const result = await ggufAllShards(url);
const ms = performance.now() - start;
let tensors = 0;
for (const shard of result.shards) tensors += shard.tensorInfos.length;
console.log(JSON.stringify({ ms, files: result.shards.length, tensors }));
