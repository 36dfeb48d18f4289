#include "report_command.h"

#include "llama_plan.h"

#include "command_support.h"
#include "deployment_search.h"
#include "errors.h"
#include "triage_report.h"
#include "untrusted_text.h"
#include "version.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>

namespace atlas {

namespace {

const char *const kUsage =
    "usage: ckpt-atlas report [SOURCE] --out DIR [options]\n"
    "\n"
    "A one-page triage report of the checkpoint: identity and provenance, size with and without MTP, active\n"
    "parameters, formats per category, the layer mix, cache per token and per sequence, the smallest\n"
    "deployment of every GPU preset that holds one sequence, and anomalies (schedule mismatches, tensors of\n"
    "no known role, router biases that collapse in BF16, warnings). Writes DIR/report.md, DIR/report.html\n"
    "(self-contained), DIR/report.json (every number the pages print) and the figures report.md references.\n"
    "\n"
    "  --out DIR                 where to write (made if missing)\n"
    "  --engine vllm|sglang      whose cache the report counts and plans with (default vllm); a cache\n"
    "                            flag below counts that cache instead\n"
    "  --context N, --kv-dtype ..., --cache-preset ..., --state-dtype ..., --index-entry-bytes N,\n"
    "  --revision REV, --ca-bundle FILE, --connections N, --timeout SECONDS, --no-cache   as for inspect\n"
    "\n"
    "exit codes: 0 written, 2 usage, 3 source, network or a file that cannot be written, 4 invalid\n"
    "            checkpoint, 130 interrupted (Ctrl-C)\n";

std::string utcNow()
{
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
}

void writeFile(const std::filesystem::path &path, const std::string &text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw AtlasError(ErrorKind::Source, path.string() + ": cannot be written");
}

} // namespace

nlohmann::ordered_json triageJson(const LoadResult &loaded, PlanEngine engine, bool cacheGiven)
{
    using J = nlohmann::ordered_json;
    // The engine's cache, as a plan counts it, unless cache flags were given (the budget is arithmetic on
    // what was read: made again).
    LoadResult result = loaded;
    const bool gguf = loaded.layout->checkpoint.format == CheckpointFormat::Gguf;
    if (!cacheGiven && !gguf) { // a GGUF's budget is llama.cpp's already
        auto adjusted = std::make_shared<LoadedCheckpoint>(*loaded.layout);
        CacheOptions given;
        given.contextTokens = loaded.layout->cache.contextTokens;
        adjusted->cache = computeCacheBudget(adjusted->checkpoint, adjusted->analysis,
                                             engineCacheOptions(engine, false, nullptr, *adjusted, given));
        result.layout = adjusted;
    }
    J report = buildReport(result);
    const LoadedCheckpoint &data = *result.layout;
    SearchOptions so;
    so.engine = engine;
    so.context = data.cache.contextTokens;
    if (cacheGiven) { // the flags' cache for every GPU, as the report counts it
        so.cache = cacheOptionsOf(data.cache);
    }
    if (gguf) {
        // A GGUF runs on llama.cpp: each GPU's offload (planLlamaCpp), in its flags' words.
        J gpus = J::array();
        for (const GpuPreset &gpu : gpuPresets()) {
            if (!gpu.runtime) continue; // the GPUs whose memory a runtime reported, as the search's default
            LlamaPlanOptions lo;
            lo.gpuMemory = gpu.bytes;
            lo.gpuName = std::string(gpu.name);
            lo.context = data.cache.contextTokens;
            const LlamaPlan p = planLlamaCpp(data, lo, cacheOptionsOf(data.cache));
            gpus.push_back({{"gpu", std::string(gpu.name)},
                            {"gpu_memory_bytes", gpu.bytes},
                            {"cache", cacheShortWords(data.cache)},
                            {"llama_cpp", {{"fits", p.fitsGpu}, {"flags", p.flags}, {"gpu_bytes", p.gpuTotal}, {"host_bytes", p.hostTotal}}},
                            {"smallest", J()}});
        }
        report["triage"] = {{"generated", utcNow()},
                            {"cache_layout", cacheShortWords(data.cache)},
                            {"tool_version", std::string(kAtlasVersion)},
                            {"layer_mix", layerMix(report)},
                            {"fits_on", {{"engine", "llama.cpp"},
                                         {"context_tokens", data.cache.contextTokens},
                                         {"max_gpus", 1},
                                         {"cache", cacheShortWords(data.cache)},
                                         {"gpus", gpus}}}};
        return report;
    }
    const DeploymentSearch found = searchDeployments(data, so);
    J gpus = J::array();
    for (const auto &k : found.gpus) {
        J g = {{"gpu", std::string(k.gpu->name)}, {"gpu_memory_bytes", k.gpu->bytes}, {"cache", k.cacheLayout}};
        g["smallest"] = k.smallest ? J{{"gpus", k.smallest->gpus},
                                       {"layout", k.smallest->layout()},
                                       {"sequences_at_context", k.smallest->sequences}}
                                   : J();
        gpus.push_back(std::move(g));
    }
    J fits = {{"engine", std::string(planEngineName(engine))},
              {"context_tokens", found.options.context},
              {"max_gpus", found.options.maxGpus},
              {"cache", found.gpus.empty() ? std::string() : found.gpus.front().cacheLayout},
              {"gpus", gpus}};
    report["triage"] = {{"generated", utcNow()},
                        {"cache_layout", cacheLayoutWords(data.cache, cacheGiven ? std::nullopt
                                                                                 : std::optional<PlanEngine>(engine))},
                        {"tool_version", std::string(kAtlasVersion)},
                        {"layer_mix", layerMix(report)},
                        {"fits_on", fits}};
    return report;
}

std::vector<std::filesystem::path> writeTriageReport(const LoadResult &result, PlanEngine engine,
                                                     const std::filesystem::path &dir, bool cacheGiven)
{
    const nlohmann::ordered_json report = triageJson(result, engine, cacheGiven);
    const TriageFiles pages = triageReport(report);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw AtlasError(ErrorKind::Source, dir.string() + ": cannot be made (" + ec.message() + ")");
    std::vector<std::filesystem::path> written;
    const auto put = [&](const std::string &name, const std::string &text) {
        writeFile(dir / name, text);
        written.push_back(dir / name);
    };
    put("report.md", pages.markdown);
    put("report.html", pages.html);
    put("report.json", jsonOutput(report) + "\n");
    for (const auto &[name, svg] : pages.figures)
        put(name, svg);
    return written;
}

int runReport(const std::vector<std::string> &args)
{
    return runCommand("report", [&](const std::atomic<bool> *interrupted) {
        std::string source, revision, out;
        NetworkOptions network;
        CacheOptions cache;
        PlanEngine engine = PlanEngine::Vllm;
        bool cacheGiven = false;
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string &a = args[i];
            const std::function<std::string()> value = [&] { return optionValue(args, i); };
            if (a == "--kv-dtype" || a == "--cache-preset" || a == "--state-dtype" || a == "--index-entry-bytes")
                cacheGiven = true;
            if (a == "-h" || a == "--help") {
                std::cout << kUsage;
                return 0;
            } else if (parseSourceAndCacheOption(a, value, network, cache)) {
            } else if (a == "--revision") {
                revision = value();
            } else if (a == "--out") {
                out = value();
            } else if (a == "--engine") {
                const std::string v = value();
                if (v == "vllm")
                    engine = PlanEngine::Vllm;
                else if (v == "sglang")
                    engine = PlanEngine::Sglang;
                else
                    throw AtlasError(ErrorKind::Usage, "--engine takes vllm or sglang, not '" + v + "'");
            } else if (a.starts_with("--")) {
                throw AtlasError(ErrorKind::Usage, "unknown option " + a);
            } else if (source.empty()) {
                source = a;
            } else {
                throw AtlasError(ErrorKind::Usage, "more than one SOURCE ('" + source + "', '" + a + "')");
            }
        }
        if (out.empty()) throw AtlasError(ErrorKind::Usage, "report needs --out DIR");
        LoadRequest request = sourceRequest(source, revision, network, cache);
        request.biases = true; // the collapse of router biases in BF16 is an anomaly worth a line
        const LoadResult result = LoadPipeline(std::move(request)).run(interrupted);
        for (const auto &f : writeTriageReport(result, engine, out, cacheGiven))
            std::cout << printable(f.string()) << "\n";
        return 0;
    });
}

} // namespace atlas
