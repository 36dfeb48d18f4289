#include "plan_command.h"

#include "capacity_plan.h"
#include "deployment_search.h"
#include "llama_plan.h"
#include "c_locale.h"
#include "command_support.h"
#include "errors.h"
#include "load_pipeline.h"
#include "report.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>

namespace atlas {

namespace {

const char *kUsage =
    "usage: ckpt-atlas plan [SOURCE] --gpus N (--gpu NAME | --gpu-memory BYTES) [options]\n"
    "       ckpt-atlas plan [SOURCE] --search [--gpu NAME ...] [--sequences S] [--max-gpus N] [options]\n"
    "  NAME: H100, H200, B200, MI300X (memory as the runtime reports it); H20, B300, GB200, MI325X, MI355X,\n"
    "        L40S, \"RTX PRO 6000\" (the vendor's figure: a runtime sees a little less)\n"
    "\n"
    "How the checkpoint's weights and cache sit on N GPUs by the engine's placement rules (domain.md\n"
    "section 14), what cache room is left, and how many sequences of --context tokens it holds.\n"
    "\n"
    "  --search                  the smallest deployments: every GPU count (1-16, then nodes of 8 up to\n"
    "                            --max-gpus, 64) x TP x PP x EP x DP attention the engine can run, on each\n"
    "                            --gpu (default: every preset), the Pareto set of fewest GPUs against most\n"
    "                            sequences of --context; --json prints ckpt-atlas.plan-search/1\n"
    "  --sequences S             with --search: the smallest deployment that holds S sequences (default 1)\n"
    "  --tp N                    tensor parallelism (default: the number of GPUs)\n"
    "  --ep N                    expert parallelism: whole experts, (experts + redundant) / N per GPU\n"
    "  --redundant-experts R     extra expert copies with --ep\n"
    "  --dp-attention N          data-parallel attention groups inside TP (each holds its own sequences)\n"
    "  --pp N                    pipeline stages (layers split as vLLM does; TP x PP = GPUs)\n"
    "  --mtp                     load the MTP layers too (speculative decoding)\n"
    "  --mtp both                with --search: each GPU searched without the MTP layers and with them\n"
    "  --mem-fraction F          the share of GPU memory the engine takes (default: vLLM 0.9, SGLang's heuristic)\n"
    "  --reserve BYTES           set aside for activations, CUDA graphs and buffers (default 0)\n"
    "  --engine vllm|sglang      whose placement, pipeline split and memory fraction (default vllm)\n"
    "  --engine llama.cpp        a GGUF on one GPU: how many blocks to offload (-ngl) and whose routed experts\n"
    "                            stay in host memory (--n-cpu-moe), the cache by -c and -ctk/-ctv; with\n"
    "                            --host-memory BYTES, whether the host holds the rest; --ngl N and\n"
    "                            --n-cpu-moe N fix either (-ngl past the blocks offloads all, as 999 does);\n"
    "                            --parallel N sequences share the -c tokens; --reserve (default 1 GiB)\n"
    "  --json                    print the ckpt-atlas.plan/1 JSON (with its explain object)\n"
    "  --explain                 print the working behind weight_bytes, max_cached_tokens and sequences\n"
    "  --context N               tokens per sequence (default: max_position_embeddings)\n"
    "  --kv-dtype ..., --cache-preset ..., --state-dtype ..., --index-entry-bytes N\n"
    "                            the cache as for inspect; without any of them the engine's own (vLLM's or\n"
    "                            SGLang's rows and index entries, BF16 at kv_cache_dtype auto, the MTP layer's\n"
    "                            with --mtp), named in the verdict\n"
    "  "
    "--revision REV, --ca-bundle FILE, --connections N, --timeout SECONDS, --no-cache   as for inspect\n"
    "\n"
    "exit codes: 0 fits, 1 does not fit, 2 usage (or an impossible combination), 3 source or network,\n"
    "            4 invalid checkpoint, 130 interrupted (Ctrl-C)\n";

struct PlanArgs
{
    bool help = false, json = false, explain = false;
    std::string source, revision;
    NetworkOptions network;
    CacheOptions cache;
    PlanOptions plan;
    bool gpusGiven = false;
    bool cacheGiven = false; // --kv-dtype, --cache-preset, --state-dtype or --index-entry-bytes: not the engine's
    bool search = false;
    bool mtpBoth = false; // --mtp both (search)
    std::vector<const GpuPreset *> searchGpus; // every --gpu (search)
    std::uint64_t sequences = 1;
    int maxGpus = 64;
    bool llama = false; // --engine llama.cpp
    LlamaPlanOptions llamaPlan;
    bool reserveGiven = false;
};

int intOption(const std::string &option, const std::string &v, int max)
{
    return static_cast<int>(parseCount(option, v, static_cast<std::uint64_t>(max)));
}

PlanArgs parsePlanArgs(const std::vector<std::string> &args)
{
    PlanArgs o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        const std::function<std::string()> value = [&] { return optionValue(args, i); };
        if (a == "--kv-dtype" || a == "--cache-preset" || a == "--state-dtype" || a == "--index-entry-bytes")
            o.cacheGiven = true;
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--explain") {
            o.explain = true;
        } else if (parseSourceAndCacheOption(a, value, o.network, o.cache)) {
        } else if (a == "--revision") {
            o.revision = value();
        } else if (a == "--gpus") {
            o.plan.gpus = intOption(a, value(), 1 << 20);
            o.gpusGiven = true;
        } else if (a == "--gpu") {
            const std::string v = value();
            const auto bytes = gpuMemoryFromName(v);
            if (!bytes) {
                std::string names;
                for (const auto &p : gpuPresets())
                    names += (names.empty() ? "" : ", ") + std::string(p.name);
                throw AtlasError(ErrorKind::Usage, "--gpu takes " + names + " (or use --gpu-memory BYTES), not '" + v + "'");
            }
            o.plan.gpuName = v;
            o.plan.gpuMemory = *bytes;
            o.searchGpus.push_back(gpuPresetNamed(v));
        } else if (a == "--search") {
            o.search = true;
        } else if (a == "--sequences") {
            o.sequences = parseCount(a, value(), std::uint64_t(1) << 32);
        } else if (a == "--max-gpus") {
            o.maxGpus = intOption(a, value(), 4096);
        } else if (a == "--gpu-memory") {
            o.plan.gpuMemory = parseCount(a, value(), std::uint64_t(1) << 50);
            o.plan.gpuName.clear();
        } else if (a == "--tp") {
            o.plan.tp = intOption(a, value(), 1 << 20);
        } else if (a == "--ep") {
            o.plan.ep = intOption(a, value(), 1 << 20);
        } else if (a == "--dp-attention") {
            o.plan.dpAttention = intOption(a, value(), 1 << 20);
        } else if (a == "--pp") {
            o.plan.pp = intOption(a, value(), 1 << 20);
        } else if (a == "--redundant-experts") {
            o.plan.redundantExperts = static_cast<int>(parseCount(a, value(), 1 << 20));
        } else if (a == "--mtp") {
            o.plan.mtp = true;
            if (i + 1 < args.size() && args[i + 1] == "both") {
                o.mtpBoth = true;
                o.plan.mtp = false;
                ++i;
            }
        } else if (a == "--mem-fraction") {
            const std::string v = value();
            char *end = nullptr;
            const double f = std::strtod(v.c_str(), &end);
            if (!end || *end || !(f > 0 && f <= 1))
                throw AtlasError(ErrorKind::Usage, "--mem-fraction takes a number in (0, 1], not '" + v + "'");
            o.plan.memFraction = f;
        } else if (a == "--reserve") {
            const std::string v = value();
            o.plan.reserve = v == "0" ? 0 : parseCount(a, v, std::uint64_t(1) << 50);
            o.reserveGiven = true;
        } else if (a == "--engine") {
            const std::string v = value();
            if (v == "vllm")
                o.plan.engine = PlanEngine::Vllm;
            else if (v == "sglang")
                o.plan.engine = PlanEngine::Sglang;
            else if (v == "llama.cpp" || v == "llama-cpp" || v == "llamacpp")
                o.llama = true;
            else
                throw AtlasError(ErrorKind::Usage, "--engine takes vllm, sglang or llama.cpp, not '" + v + "'");
        } else if (a == "--host-memory") {
            o.llamaPlan.hostMemory = parseCount(a, value(), std::uint64_t(1) << 50);
        } else if (a == "--ngl" || a == "-ngl" || a == "--n-gpu-layers") {
            const std::string v = value();
            o.llamaPlan.ngl = v == "0" ? 0 : intOption(a, v, 1 << 20);
        } else if (a == "--n-cpu-moe" || a == "-ncmoe") {
            const std::string v = value();
            o.llamaPlan.nCpuMoe = v == "0" ? 0 : intOption(a, v, 1 << 20);
        } else if (a == "--parallel" || a == "-np") {
            o.llamaPlan.parallel = intOption(a, value(), 1 << 16);
        } else if (a.starts_with("--")) {
            throw AtlasError(ErrorKind::Usage, "unknown option " + a);
        } else if (o.source.empty()) {
            o.source = a;
        } else {
            throw AtlasError(ErrorKind::Usage, "more than one SOURCE ('" + o.source + "', '" + a + "')");
        }
    }
    if (o.mtpBoth && !o.search) throw AtlasError(ErrorKind::Usage, "--mtp both needs --search (a plan loads the MTP layers or not)");
    if (o.search && o.plan.gpuMemory && o.plan.gpuName.empty())
        throw AtlasError(ErrorKind::Usage, "--search takes GPUs by name (--gpu NAME, repeated), not --gpu-memory");
    if (o.llama && !o.help) {
        if (o.search) throw AtlasError(ErrorKind::Usage, "--engine llama.cpp plans one GPU; --search is for vllm and sglang");
        if (o.gpusGiven && o.plan.gpus != 1)
            throw AtlasError(ErrorKind::Usage, "--engine llama.cpp plans one GPU (a split over several, -ts, is not modelled)");
        if (o.plan.gpuMemory == 0) throw AtlasError(ErrorKind::Usage, "plan needs the GPU: --gpu NAME or --gpu-memory BYTES");
        return o;
    }
    if (!o.help && !o.search && !o.gpusGiven) throw AtlasError(ErrorKind::Usage, "plan needs --gpus N (or --search)");
    if (!o.help && !o.search && o.plan.gpuMemory == 0)
        throw AtlasError(ErrorKind::Usage, "plan needs the GPU: --gpu NAME or --gpu-memory BYTES");
    return o;
}

nlohmann::ordered_json planJson(const CapacityPlan &p, const LoadedCheckpoint &data, const CacheBudget &cache,
                                const std::string &layout, bool byEngine)
{
    using J = nlohmann::ordered_json;
    const PlanOptions &o = p.options;
    const PlanPerGpu &g = p.perGpu;
    J out;
    out["schema"] = "ckpt-atlas.plan/1";
    out["model"] = {{"type", data.checkpoint.config.modelType}, {"source", data.checkpoint.source.location}};
    out["engine"] = planEngineName(o.engine);
    out["gpus"] = o.gpus;
    out["gpu"] = o.gpuName.empty() ? J() : J(o.gpuName);
    out["gpu_memory_bytes"] = o.gpuMemory;
    // Whose figure the memory is: the runtime's, the vendor's (a runtime sees a little less), or the user's.
    const GpuPreset *preset = o.gpuName.empty() ? nullptr : gpuPresetNamed(o.gpuName);
    out["gpu_memory_source"] = preset ? J(std::string(preset->runtime ? "runtime: " : "vendor: ") + std::string(preset->source))
                                      : J("given (--gpu-memory)");
    out["parallelism"] = {{"tp", *o.tp}, {"ep", o.ep}, {"dp_attention", o.dpAttention}, {"pp", o.pp},
                          {"redundant_experts", o.redundantExperts}};
    out["mtp"] = o.mtp;
    out["mem_fraction"] = o.memFraction.value_or(0.9);
    out["reserve_bytes"] = o.reserve;
    out["context_tokens"] = o.context;
    out["cache"] = {{"preset", cachePresetName(cache.preset)},
                    {"kv_dtype", kvDtypeName(cache.kvDtype)},
                    {"state_dtype", stateDtypeName(cache.stateDtype)},
                    {"chosen_by", byEngine ? "engine" : "flags"},
                    {"layout", layout}};
    const double perToken = g.cacheBytesPerToken;
    out["per_gpu"] = {{"weight_bytes", g.weightBytes},
                      {"replicated_bytes", g.replicatedBytes},
                      {"split_bytes", g.splitBytes},
                      {"expert_bytes", g.expertBytes},
                      {"experts", g.experts},
                      {"cache_bytes_per_token", perToken == std::floor(perToken) ? J(std::uint64_t(perToken)) : J(perToken)},
                      {"state_bytes_per_sequence", g.stateBytesPerSequence},
                      {"usable_bytes", g.usableBytes},
                      {"cache_room_bytes", g.cacheRoomBytes},
                      {"max_cached_tokens", g.maxCachedTokens}};
    out["sequences_at_context"] = p.sequencesAtContext;
    out["host_bytes"] = p.hostBytes; // host-resident tables: in host memory, counted against no GPU
    // Pipeline stages: what one GPU of each stage holds; per_gpu is the binding stage's.
    J stages = J::array();
    for (const PlanStage &s : p.stages) {
        const double stageToken = s.perGpu.cacheBytesPerToken;
        stages.push_back({{"first_layer", s.firstLayer},
                          {"end_layer", s.endLayer},
                          {"embedding", s.embedding},
                          {"head", s.head},
                          {"weight_bytes", s.perGpu.weightBytes},
                          {"cache_bytes_per_token",
                           stageToken == std::floor(stageToken) ? J(std::uint64_t(stageToken)) : J(stageToken)},
                          {"state_bytes_per_sequence", s.perGpu.stateBytesPerSequence},
                          {"cache_room_bytes", s.perGpu.cacheRoomBytes},
                          {"max_cached_tokens", s.perGpu.maxCachedTokens},
                          {"sequences_at_context", s.sequencesAtContext == UINT64_MAX ? J() : J(s.sequencesAtContext)}});
    }
    out["stages"] = std::move(stages);
    out["binding_stage"] = p.bindingStage;
    out["fits"] = p.fits;
    out["reason"] = p.reason;
    out["notes"] = p.notes;
    out["explain"] = explanationsJson(explainPlan(p));
    return out;
}

std::string planText(const CapacityPlan &p, const std::string &layout)
{
    const CLocaleScope cLocale;
    const PlanPerGpu &g = p.perGpu;
    const PlanOptions &o = p.options;
    std::string s;
    s += p.reason + ".\n\n";
    s += "GPUs        " + std::to_string(o.gpus) + " × " + (o.gpuName.empty() ? groupDigits(o.gpuMemory) + " B" : o.gpuName) +
         ", TP " + std::to_string(*o.tp) + (o.ep ? ", EP " + std::to_string(o.ep) : std::string()) +
         (o.dpAttention > 1 ? ", DP attention " + std::to_string(o.dpAttention) : std::string()) +
         (o.pp > 1 ? ", PP " + std::to_string(o.pp) : std::string()) + ", " + std::string(planEngineName(o.engine)) + "\n";
    if (p.stages.size() > 1)
        for (std::size_t i = 0; i < p.stages.size(); ++i) {
            const PlanStage &st = p.stages[i];
            s += (i == 0 ? "Stages      " : "            ") + std::to_string(i + 1) + ": layers " +
                 std::to_string(st.firstLayer) + "–" + std::to_string(st.endLayer - 1) +
                 (st.embedding ? " + embedding" : "") + (st.head ? " + head" : "") + ", weights " +
                 binaryBytes(st.perGpu.weightBytes) + ", room " +
                 (st.perGpu.cacheRoomBytes > 0 ? binaryBytes(static_cast<std::uint64_t>(st.perGpu.cacheRoomBytes))
                                               : std::string("none")) +
                 ", " + groupDigits(st.perGpu.maxCachedTokens) + " tokens" +
                 (static_cast<int>(i) == p.bindingStage ? "  ← binding" : "") + "\n";
        }
    s += std::string(p.stages.size() > 1 ? "Stage GPU   " : "Per GPU     ") + "weights " + groupDigits(g.weightBytes) + " B (" + binaryBytes(g.weightBytes) + "): replicated " +
         groupDigits(g.replicatedBytes) + ", split " + groupDigits(g.splitBytes) + ", experts " +
         groupDigits(g.expertBytes) + (g.experts ? " (" + std::to_string(g.experts) + " whole experts)" : std::string()) +
         "\n";
    s += "            usable " + groupDigits(g.usableBytes) + " B (" + binaryBytes(g.usableBytes) + "), cache room " +
         (g.cacheRoomBytes > 0 ? groupDigits(static_cast<std::uint64_t>(g.cacheRoomBytes)) + " B"
                               : "none (" + groupDigits(static_cast<std::uint64_t>(-g.cacheRoomBytes)) + " B short)") +
         "\n";
    s += "Cache       " + (g.cacheBytesPerToken == std::floor(g.cacheBytesPerToken)
                                 ? groupDigits(static_cast<std::uint64_t>(g.cacheBytesPerToken))
                                 : fixedPoint(g.cacheBytesPerToken, 4)) +
         " B per token on each GPU" +
         (g.stateBytesPerSequence ? ", " + groupDigits(g.stateBytesPerSequence) + " B per sequence on each GPU"
                                  : std::string()) +
         "; " + groupDigits(g.maxCachedTokens) + " tokens fit\n";
    s += "            " + layout + "\n";
    s += "Sequences   " + groupDigits(p.sequencesAtContext) + " of " + groupDigits(o.context) + " tokens\n";
    for (const auto &n : p.notes)
        s += "Note        " + n + "\n";
    return s;
}

nlohmann::ordered_json searchJson(const DeploymentSearch &d, const LoadedCheckpoint &data, bool byEngine)
{
    using J = nlohmann::ordered_json;
    const auto point = [](const SearchPoint &p) {
        return J{{"gpus", p.gpus},
                 {"tp", p.tp},
                 {"ep", p.ep},
                 {"pp", p.pp},
                 {"dp_attention", p.dpAttention},
                 {"layout", p.layout()},
                 {"sequences_at_context", p.sequences},
                 {"weight_bytes_per_gpu", p.weightBytes},
                 {"max_cached_tokens_per_gpu", p.maxCachedTokens}};
    };
    J out;
    out["schema"] = "ckpt-atlas.plan-search/1";
    out["model"] = {{"type", data.checkpoint.config.modelType}, {"source", data.checkpoint.source.location}};
    out["engine"] = planEngineName(d.options.engine);
    out["context_tokens"] = d.options.context;
    out["sequences_wanted"] = d.options.sequences;
    out["max_gpus"] = d.options.maxGpus;
    out["mtp"] = d.options.mtpBoth ? nlohmann::ordered_json("both") : nlohmann::ordered_json(d.options.mtp);
    out["cache_chosen_by"] = byEngine ? "engine" : "flags";
    out["plans_tried"] = d.plansTried;
    out["plans_refused"] = d.plansRefused;
    J kinds = J::array();
    for (const auto &k : d.gpus) {
        J pareto = J::array();
        for (const auto &p : k.pareto)
            pareto.push_back(point(p));
        kinds.push_back({{"gpu", std::string(k.gpu->name)},
                         {"mtp", k.mtp},
                         {"gpu_memory_bytes", k.gpu->bytes},
                         {"gpu_memory_source", std::string(k.gpu->runtime ? "runtime: " : "vendor: ") + std::string(k.gpu->source)},
                         {"cache_layout", k.cacheLayout},
                         {"pareto", pareto},
                         {"smallest", k.smallest ? point(*k.smallest) : J()}});
    }
    out["gpu_kinds"] = kinds;
    if (d.best) {
        J best = point(*d.gpus[*d.best].smallest);
        best["gpu"] = std::string(d.gpus[*d.best].gpu->name);
        best["mtp"] = d.gpus[*d.best].mtp;
        out["smallest"] = best;
    } else {
        out["smallest"] = J();
    }
    return out;
}

std::string searchText(const DeploymentSearch &d)
{
    const CLocaleScope cLocale;
    std::string s;
    const auto seqs = [](std::uint64_t n) { return groupDigits(n) + (n == 1 ? " sequence" : " sequences"); };
    if (d.best) {
        const GpuSearch &k = d.gpus[*d.best];
        s += "Smallest: " + std::to_string(k.smallest->gpus) + " × " + std::string(k.gpu->name) + " (" +
             k.smallest->layout() + (k.mtp ? ", with the MTP layers" : "") + ") holds " + seqs(k.smallest->sequences) + " of " + groupDigits(d.options.context) +
             " tokens, " + (d.options.engine == PlanEngine::Sglang ? "SGLang" : "vLLM") + ".\n\n";
    } else {
        s += "No deployment of up to " + std::to_string(d.options.maxGpus) + " GPUs of these kinds holds " +
             seqs(d.options.sequences) + " of " + groupDigits(d.options.context) + " tokens.\n\n";
    }
    for (const auto &k : d.gpus) {
        s += std::string(k.gpu->name) + " (" + binaryBytes(k.gpu->bytes) + (k.mtp ? ", with the MTP layers" : "") + "): ";
        if (k.pareto.empty()) {
            s += "no deployment of up to " + std::to_string(d.options.maxGpus) + " GPUs holds one sequence\n";
            continue;
        }
        s += (k.smallest ? "from " + std::to_string(k.smallest->gpus) + " GPUs"
                         : "never " + seqs(d.options.sequences)) +
             "; " + k.cacheLayout + "\n";
        for (const auto &p : k.pareto)
            s += "    " + std::to_string(p.gpus) + " GPUs, " + p.layout() + ": " + seqs(p.sequences) + "\n";
    }
    s += "\n" + std::to_string(d.plansTried) + " plans tried, " + std::to_string(d.plansRefused) +
         " refused by the engine's divisibility rules; the Pareto set per GPU: fewest GPUs against most sequences.\n";
    return s;
}

} // namespace

int runPlan(const std::vector<std::string> &args)
{
    return runCommand("plan", [&](const std::atomic<bool> *interrupted) {
        const PlanArgs o = parsePlanArgs(args);
        if (o.help) {
            std::cout << kUsage;
            return 0;
        }
        LoadRequest request = sourceRequest(o.source, o.revision, o.network, o.cache);
        request.biases = false;
        const LoadResult result = LoadPipeline(std::move(request)).run(interrupted);
        // The engine decides the cache unless a cache flag says otherwise (the budget is arithmetic on what
        // was read: made again with the engine's options).
        const LoadedCheckpoint &data = *result.layout;
        if (o.llama) {
            if (data.checkpoint.format != CheckpointFormat::Gguf)
                throw AtlasError(ErrorKind::Usage, "--engine llama.cpp plans a GGUF source (this one is safetensors; "
                                                   "open the GGUF copy, e.g. --gguf Q4_K_M)");
            LlamaPlanOptions lo = o.llamaPlan;
            lo.gpuMemory = o.plan.gpuMemory;
            lo.gpuName = o.plan.gpuName;
            lo.context = o.cache.contextTokens.value_or(0);
            if (o.reserveGiven) lo.reserve = o.plan.reserve;
            const LlamaPlan lp = planLlamaCpp(data, lo, o.cache);
            if (o.json) {
                nlohmann::ordered_json j;
                j["schema"] = "ckpt-atlas.plan-llama/1";
                j["model"] = {{"type", data.checkpoint.config.modelType}, {"source", data.checkpoint.source.location}};
                j["engine"] = "llama.cpp";
                j["gpu"] = lo.gpuName.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(lo.gpuName);
                j["gpu_memory_bytes"] = lo.gpuMemory;
                j["host_memory_bytes"] = lo.hostMemory ? nlohmann::ordered_json(lo.hostMemory) : nlohmann::ordered_json();
                j["context_tokens"] = lp.options.context;
                j["parallel"] = lo.parallel;
                j["blocks"] = lp.blocks;
                j["ngl"] = lp.ngl;
                j["n_cpu_moe"] = lp.nCpuMoe;
                j["output_on_gpu"] = lp.outputOnGpu;
                j["flags"] = lp.flags;
                j["override_tensor"] = lp.overrideTensor;
                j["gpu"] = {{"weights", lp.gpuWeights}, {"experts", lp.gpuExperts}, {"cache", lp.gpuCache},
                            {"reserve", lo.reserve}, {"total", lp.gpuTotal}};
                j["host"] = {{"weights", lp.hostWeights}, {"experts", lp.hostExperts}, {"cache", lp.hostCache}, {"total", lp.hostTotal}};
                j["skipped_bytes"] = lp.skippedBytes;
                j["fits_gpu"] = lp.fitsGpu;
                j["fits_host"] = lp.fitsHost ? nlohmann::ordered_json(*lp.fitsHost) : nlohmann::ordered_json();
                j["fits"] = lp.fitsGpu && lp.fitsHost.value_or(true);
                j["verdict"] = lp.verdict;
                j["notes"] = lp.notes;
                std::cout << jsonOutput(j) << "\n";
            } else {
                std::string s = lp.verdict + ".\n\n";
                s += "Flags       " + lp.flags + "\n";
                if (!lp.overrideTensor.empty()) s += "            or " + lp.overrideTensor + " for the experts\n";
                s += "GPU         " + binaryBytes(lp.gpuTotal) + ": blocks " + std::to_string(std::max(lp.blocks + 1 - lp.ngl, 0)) +
                     "\u2013" + std::to_string(lp.blocks - 1) + (lp.outputOnGpu ? " and the output layer" : "") +
                     ", weights " + binaryBytes(lp.gpuWeights) + " + experts " + binaryBytes(lp.gpuExperts) + ", cache " +
                     binaryBytes(lp.gpuCache) + ", reserve " + binaryBytes(lo.reserve) + "\n";
                s += "Host        " + binaryBytes(lp.hostTotal) + ": weights " + binaryBytes(lp.hostWeights) + " + experts " +
                     binaryBytes(lp.hostExperts) + ", cache " + binaryBytes(lp.hostCache) +
                     (lo.hostMemory ? " of " + binaryBytes(lo.hostMemory) : std::string()) + "\n";
                for (const auto &n : lp.notes)
                    s += "Note        " + n + "\n";
                printText(std::cout, s);
            }
            return lp.fitsGpu && lp.fitsHost.value_or(true) ? 0 : 1;
        }
        if (o.search) {
            if (o.cacheGiven && data.cache.kvDtypeMisfit)
                throw AtlasError(ErrorKind::Usage, "--kv-dtype: " + data.cache.reason);
            SearchOptions so;
            so.engine = o.plan.engine;
            so.gpus = o.searchGpus;
            so.context = o.cache.contextTokens.value_or(0);
            so.sequences = o.sequences;
            so.maxGpus = o.maxGpus;
            so.mtp = o.plan.mtp;
            so.mtpBoth = o.mtpBoth;
            if (o.cacheGiven) so.cache = o.cache;
            so.memFraction = o.plan.memFraction;
            so.reserve = o.plan.reserve;
            const DeploymentSearch found = searchDeployments(data, so);
            if (o.json)
                std::cout << jsonOutput(searchJson(found, data, !o.cacheGiven)) << "\n";
            else
                printText(std::cout, searchText(found));
            return found.best ? 0 : 1;
        }
        CacheBudget engines;
        if (!o.cacheGiven)
            engines = computeCacheBudget(
                data.checkpoint, data.analysis,
                engineCacheOptions(o.plan.engine, o.plan.mtp, gpuPresetNamed(o.plan.gpuName), data, o.cache));
        const CacheBudget &cache = o.cacheGiven ? data.cache : engines;
        if (cache.kvDtypeMisfit) throw AtlasError(ErrorKind::Usage, "--kv-dtype: " + cache.reason);
        PlanOptions options = o.plan;
        options.context = cache.contextTokens; // --context, else max_position_embeddings (as everywhere)
        CapacityPlan plan = planCapacity(data, options, nullptr, &cache);
        // Does not fit: the smallest deployment of this GPU that would (another layout, or more GPUs).
        std::optional<SearchPoint> wayOut;
        if (!plan.fits) {
            if (const GpuPreset *gpu = gpuPresetNamed(o.plan.gpuName)) {
                SearchOptions so;
                so.engine = o.plan.engine;
                so.gpus = {gpu};
                so.context = options.context;
                so.maxGpus = std::max(64, o.plan.gpus * 2);
                so.mtp = o.plan.mtp;
                if (o.cacheGiven) so.cache = o.cache;
                so.memFraction = o.plan.memFraction;
                so.reserve = o.plan.reserve;
                wayOut = searchDeployments(data, so).gpus.front().smallest;
                plan.notes.insert(plan.notes.begin(),
                                  wayOut ? "Fits from " + std::to_string(wayOut->gpus) + " × " + std::string(gpu->name) +
                                               " with " + wayOut->layout() + " (" + groupDigits(wayOut->sequences) +
                                               " sequences of " + groupDigits(options.context) +
                                               " tokens); plan --search lists the others"
                                         : "No deployment of up to " + std::to_string(so.maxGpus) + " × " +
                                               std::string(gpu->name) + " holds one sequence of " +
                                               groupDigits(options.context) + " tokens");
            }
        }
        const std::string layout = cacheLayoutWords(cache, o.cacheGiven ? std::nullopt : std::optional(o.plan.engine));
        if (o.json)
        {
            auto j = planJson(plan, data, cache, layout, !o.cacheGiven);
            if (!plan.fits)
                j["smallest_that_fits"] =
                    wayOut ? nlohmann::ordered_json{{"gpus", wayOut->gpus},         {"tp", wayOut->tp},
                                                    {"ep", wayOut->ep},             {"pp", wayOut->pp},
                                                    {"dp_attention", wayOut->dpAttention},
                                                    {"sequences_at_context", wayOut->sequences}}
                           : nlohmann::ordered_json();
            std::cout << jsonOutput(j) << "\n";
        }
        else if (o.explain)
            printText(std::cout, formatExplanations(explainPlan(plan)));
        else
            printText(std::cout, planText(plan, layout));
        return plan.fits ? 0 : 1;
    });
}

} // namespace atlas
