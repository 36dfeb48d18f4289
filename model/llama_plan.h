#pragma once

#include "loaded_checkpoint.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

// Will a GGUF run on one GPU with llama.cpp, and with which offload options (domain.md section 20). The
// placement is llama.cpp's (src/llama-model.cpp load_tensors; common/arg.cpp):
// - -ngl N offloads the last N of the n_layer + 1 "layers" (the blocks, then the output layer: the head
//   and the final norm); blocks before them stay in host memory with their KV cache;
// - the input embedding (token_embd) always stays in host memory ("very little benefit to offloading");
// - --n-cpu-moe K keeps the routed experts of blocks 0..K-1 in host memory: the override
//   blk\.I\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU per block, which --override-tensor spells out;
//   shared experts, routers and their biases stay with their block;
// - nextn (MTP) blocks are not loaded (TENSOR_SKIP) and get no KV cache (llama_hparams::has_kv);
// - each offloaded block's KV cache sits on the GPU (offload_kqv, the default), sized by -c and -ctk/-ctv
//   (CacheBudget with the llama.cpp preset).
struct LlamaPlanOptions
{
    std::uint64_t gpuMemory = 0;
    std::string gpuName;
    std::uint64_t hostMemory = 0;  // 0: not given (host use is reported, never judged)
    std::uint64_t context = 0;     // -c; 0: the cache budget's context
    int parallel = 1;              // -np: sequences sharing the `context` tokens of the cache (-c is the total)
    std::optional<int> ngl;        // -ngl; unset: searched (every block first)
    std::optional<int> nCpuMoe;    // --n-cpu-moe; unset: searched (the fewest blocks' experts in host memory)
    // Compute buffers, CUDA graphs and the driver's share: what llama.cpp needs beyond weights and cache on
    // the GPU; not modelled, set aside (--reserve).
    std::uint64_t reserve = 1ull << 30;
};

struct LlamaPlan
{
    LlamaPlanOptions options;
    int blocks = 0;                 // n_layer: block_count, the nextn blocks included (they hold nothing here)
    int ngl = 0;                    // as chosen or given
    int nCpuMoe = 0;
    bool outputOnGpu = false;
    std::uint64_t gpuWeights = 0, gpuExperts = 0, gpuCache = 0, gpuTotal = 0;
    std::uint64_t hostWeights = 0, hostExperts = 0, hostCache = 0, hostTotal = 0;
    std::uint64_t skippedBytes = 0; // nextn blocks: not loaded
    bool fitsGpu = false;
    std::optional<bool> fitsHost; // unset when host memory was not given
    std::string flags;            // "-ngl 79 --n-cpu-moe 40 -c 32768 -ctk f16"
    std::string overrideTensor;   // the same experts as one --override-tensor pattern
    std::string verdict;          // one sentence in those options' words
    std::vector<std::string> notes;
};

// The cache is llama.cpp's (computeCacheBudget with the LlamaCpp preset and `cache`'s -ctk/-ctv types).
// -ngl past n_layer + 1 offloads all, as llama.cpp takes 99 or 999; throws AtlasError(Usage) for a negative one.
LlamaPlan planLlamaCpp(const LoadedCheckpoint &data, const LlamaPlanOptions &options, const CacheOptions &cache);

} // namespace atlas
