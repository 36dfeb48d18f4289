#include "llama_plan.h"

#include "errors.h"
#include "report.h"

#include <algorithm>

namespace atlas {

namespace {

// common/common.h LLM_FFN_EXPS_REGEX: "\.ffn_(up|down|gate|gate_up)_(ch|)exps", what --n-cpu-moe and
// --cpu-moe move to the CPU.
bool routedExpertTensor(std::string_view rest)
{
    for (std::string_view p : {"ffn_up_", "ffn_down_", "ffn_gate_", "ffn_gate_up_"})
        if (rest.starts_with(p)) {
            const std::string_view tail = rest.substr(p.size());
            return tail.starts_with("exps.") || tail.starts_with("chexps.");
        }
    return false;
}

struct Sizes
{
    std::vector<std::uint64_t> other, experts, cache; // per main block
    std::uint64_t input = 0, output = 0, skipped = 0;
};

Sizes sizesOf(const LoadedCheckpoint &data, const CacheBudget &cache, std::uint64_t tokens)
{
    const CheckpointAnalysis &a = data.analysis;
    Sizes s;
    // Every block llama.cpp numbers (block_count: the nextn blocks last, zero bytes here as they are not loaded).
    const auto blocks = static_cast<std::size_t>(a.layerCount);
    s.other.assign(blocks, 0);
    s.experts.assign(blocks, 0);
    s.cache.assign(blocks, 0);
    for (const auto &shard : data.checkpoint.shards)
        for (const auto &t : shard.tensors) {
            const TensorPlace place = placeOf(t.name);
            const int layer = a.layerOf(t.name);
            if (layer >= a.mainLayers) {
                s.skipped += t.bytes();
                continue;
            }
            if (layer < 0) {
                // The input embedding stays on the CPU; the head and final norm are the output layer.
                (t.name.starts_with("token_embd.") || t.name.ends_with("embed_tokens.weight") ? s.input : s.output) += t.bytes();
                continue;
            }
            (routedExpertTensor(place.rest) ? s.experts : s.other)[static_cast<std::size_t>(layer)] += t.bytes();
        }
    // Each block's cache at `tokens`: every group it belongs to, up to a window where there is one.
    for (const auto &g : cache.attention)
        for (int i : g.layerIndices) {
            if (i < 0 || i >= a.mainLayers) continue; // nextn blocks keep no cache
            const std::uint64_t held = g.window ? std::min<std::uint64_t>(tokens, *g.window) : tokens;
            s.cache[static_cast<std::size_t>(i)] +=
                g.bytesPerTokenPerLayer * (held / std::max<std::uint64_t>(g.compression, 1)) + g.stateBytesPerLayer.value_or(0);
        }
    return s;
}

} // namespace

LlamaPlan planLlamaCpp(const LoadedCheckpoint &data, const LlamaPlanOptions &options, const CacheOptions &given)
{
    LlamaPlan p;
    p.options = options;
    CacheOptions co = given;
    co.preset = CachePreset::LlamaCpp;
    if (options.context) co.contextTokens = options.context;
    const CacheBudget cache = computeCacheBudget(data.checkpoint, data.analysis, co);
    p.options.context = cache.contextTokens;
    // -c is the cache's size in all: -np sequences share it (each c / np tokens when not unified).
    const std::uint64_t tokens = cache.contextTokens;
    const Sizes s = sizesOf(data, cache, tokens);
    // llama.cpp numbers n_layer = block_count blocks (the nextn ones last) and the output layer after them:
    // -ngl N offloads the last N of those n_layer + 1 (i_gpu_start = max(n_layer + 1 - N, 0)); a larger N (99,
    // 999) offloads all.
    const int L = data.analysis.layerCount;
    p.blocks = L;
    p.skippedBytes = s.skipped;
    if (options.ngl && *options.ngl < 0) throw AtlasError(ErrorKind::Usage, "-ngl takes 0 or more");
    if (options.nCpuMoe && *options.nCpuMoe < 0) throw AtlasError(ErrorKind::Usage, "--n-cpu-moe takes 0 or more");
    LlamaPlanOptions clamped = options;
    if (clamped.ngl) clamped.ngl = std::min(*clamped.ngl, L + 1);
    if (clamped.nCpuMoe) clamped.nCpuMoe = std::min(*clamped.nCpuMoe, L);
    // What the GPU and the host hold at -ngl n, --n-cpu-moe k.
    auto place = [&](int n, int k, LlamaPlan &out) {
        out.ngl = n;
        out.nCpuMoe = k;
        const int firstGpu = std::max(L + 1 - n, 0); // blocks [firstGpu, L) on the GPU
        out.outputOnGpu = n > L;
        out.gpuWeights = out.gpuExperts = out.gpuCache = 0;
        out.hostWeights = s.input, out.hostExperts = 0, out.hostCache = 0;
        (out.outputOnGpu ? out.gpuWeights : out.hostWeights) += s.output;
        for (int i = 0; i < L; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const bool gpu = i >= firstGpu;
            (gpu ? out.gpuWeights : out.hostWeights) += s.other[u];
            (gpu ? out.gpuCache : out.hostCache) += s.cache[u];
            if (gpu && i >= k)
                out.gpuExperts += s.experts[u];
            else
                out.hostExperts += s.experts[u];
        }
        out.gpuTotal = out.gpuWeights + out.gpuExperts + out.gpuCache + options.reserve;
        out.hostTotal = out.hostWeights + out.hostExperts + out.hostCache;
        out.fitsGpu = out.gpuTotal <= options.gpuMemory;
    };
    if (clamped.ngl && clamped.nCpuMoe) {
        place(*clamped.ngl, *clamped.nCpuMoe, p);
    } else if (clamped.ngl) {
        // The fewest blocks' experts in host memory at this -ngl.
        int k = 0;
        for (place(*clamped.ngl, k, p); !p.fitsGpu && k < L; place(*clamped.ngl, ++k, p)) {
        }
    } else {
        // Every block on the GPU first, with the fewest blocks' experts moved out; then fewer blocks.
        int k = clamped.nCpuMoe.value_or(0);
        for (place(L + 1, k, p); !p.fitsGpu && !clamped.nCpuMoe && k < L; place(L + 1, ++k, p)) {
        }
        for (int n = L; !p.fitsGpu && n >= 0; --n)
            place(n, clamped.nCpuMoe.value_or(L), p);
    }
    if (options.hostMemory) p.fitsHost = p.hostTotal <= options.hostMemory;

    // In llama.cpp's words.
    p.flags = "-ngl " + std::to_string(p.ngl) + (p.nCpuMoe ? " --n-cpu-moe " + std::to_string(p.nCpuMoe) : std::string()) +
              " -c " + std::to_string(p.options.context) + (options.parallel > 1 ? " -np " + std::to_string(options.parallel) : std::string()) +
              " -ctk " + llamaCacheTypeName(cache.llamaCacheTypeK) +
              (cache.mla() ? std::string() : " -ctv " + llamaCacheTypeName(cache.llamaCacheTypeV));
    if (p.nCpuMoe > 0) {
        // blk\.(0|1|...|K-1)\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU, the numbers as one alternation.
        std::string alt;
        for (int i = 0; i < p.nCpuMoe; ++i)
            alt += (i ? "|" : "") + std::to_string(i);
        p.overrideTensor = "-ot \"blk\\.(" + alt + ")\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU\"";
    }
    const std::string gpu = options.gpuName.empty() ? binaryBytes(options.gpuMemory) + " GPU" : "one " + options.gpuName;
    if (p.fitsGpu) {
        p.verdict = "Runs on " + gpu + " with " + p.flags + ": the GPU holds " + binaryBytes(p.gpuTotal) + " of " +
                    binaryBytes(options.gpuMemory) + " (weights " + binaryBytes(p.gpuWeights + p.gpuExperts) + ", cache " +
                    binaryBytes(p.gpuCache) + ", " + binaryBytes(options.reserve) + " set aside), host memory " +
                    binaryBytes(p.hostTotal) +
                    (p.nCpuMoe ? " (the routed experts of blocks 0\u2013" + std::to_string(p.nCpuMoe - 1) + ")" : std::string());
        if (p.fitsHost && !*p.fitsHost)
            p.verdict += "; host memory is " + binaryBytes(p.hostTotal - options.hostMemory) +
                         " short: the rest is read from disk through mmap at every token";
    } else {
        p.verdict = "Does not fit " + gpu + ": even " + p.flags + " needs " + binaryBytes(p.gpuTotal) + " on the GPU";
    }
    p.notes.push_back("llama.cpp's cache: " + cacheShortWords(cache) + ", " + groupDigits(tokens) + " tokens (" +
                      binaryBytes(p.gpuCache + p.hostCache) + " in all; a block's cache sits where the block does)" +
                      (options.parallel > 1 ? "; -np " + std::to_string(options.parallel) + " sequences share those -c tokens" : std::string()));
    p.notes.push_back("token_embd stays in host memory (llama.cpp never offloads the input layer)");
    if (p.skippedBytes)
        p.notes.push_back(binaryBytes(p.skippedBytes) + " of nextn (MTP) blocks are not loaded (llama.cpp skips them) and take no cache");
    p.notes.push_back(binaryBytes(options.reserve) + " set aside on the GPU for compute buffers (--reserve; llama.cpp prints its own at load)");
    return p;
}

} // namespace atlas
