#include "inspect_command.h"

#include "byte_source.h"
#include "checkpoint_reader.h"
#include "demo.h"
#include "errors.h"
#include "report.h"

#include <charconv>
#include <filesystem>
#include <iostream>

namespace atlas {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitExpectation = 5;

const char *kUsage =
    "usage: ckpt-atlas inspect [SOURCE] [options]\n"
    "\n"
    "SOURCE is a local checkpoint directory (config.json, model.safetensors.index.json and shards,\n"
    "or one model.safetensors). Without SOURCE, the embedded synthetic GLM-5.x demo is opened.\n"
    "\n"
    "  --json                    print the ckpt-atlas.report/1 JSON report\n"
    "  --context N               context length for the cache total (default: max_position_embeddings)\n"
    "  --kv-dtype bf16|fp8|fp8_ds_mla   MLA latent cache layout (default bf16)\n"
    "  --index-entry-bytes N     bytes per index-key entry (132 reference, 144 padded; default: padded)\n"
    "  --expect PATH=VALUE       fail with exit 5 unless the report has VALUE at PATH (repeatable)\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 source or network, 4 invalid checkpoint, 5 expectation failed\n";

std::uint64_t parseCount(const std::string &option, const std::string &value)
{
    std::uint64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec != std::errc() || r.ptr != value.data() + value.size() || v == 0)
        throw AtlasError(ErrorKind::Usage, option + " takes a positive whole number, not '" + value + "'");
    return v;
}

} // namespace

int runInspect(const std::vector<std::string> &args)
{
    try {
        std::string sourceArg;
        bool json = false;
        CacheOptions cacheOptions;
        std::vector<std::string> expectations;
        for (std::size_t i = 0; i < args.size(); ++i) {
            const std::string &a = args[i];
            auto value = [&]() -> std::string {
                if (i + 1 >= args.size())
                    throw AtlasError(ErrorKind::Usage, a + " needs a value");
                return args[++i];
            };
            if (a == "-h" || a == "--help") {
                std::cout << kUsage;
                return kExitOk;
            } else if (a == "--json") {
                json = true;
            } else if (a == "--context") {
                cacheOptions.contextTokens = parseCount(a, value());
            } else if (a == "--kv-dtype") {
                const std::string v = value();
                auto k = kvDtypeFromName(v);
                if (!k)
                    throw AtlasError(ErrorKind::Usage, "--kv-dtype takes bf16, fp8 or fp8_ds_mla, not '" + v + "'");
                cacheOptions.kvDtype = *k;
            } else if (a == "--index-entry-bytes") {
                cacheOptions.indexEntryBytes = static_cast<std::int64_t>(parseCount(a, value()));
            } else if (a == "--expect") {
                expectations.push_back(value());
            } else if (a.starts_with("--")) {
                throw AtlasError(ErrorKind::Usage, "unknown option " + a);
            } else if (sourceArg.empty()) {
                sourceArg = a;
            } else {
                throw AtlasError(ErrorKind::Usage, "more than one SOURCE given ('" + sourceArg + "', '" + a + "')");
            }
        }

        std::string directory;
        if (sourceArg.empty()) {
            directory = ensureDemoCheckpoint().string();
        } else if (sourceArg.starts_with("hf://") || sourceArg.starts_with("https://") ||
                   sourceArg.starts_with("http://")) {
            throw AtlasError(ErrorKind::Source, sourceArg + ": remote sources are not available in this build");
        } else {
            std::error_code ec;
            if (!std::filesystem::is_directory(sourceArg, ec))
                throw AtlasError(ErrorKind::Source, sourceArg + ": no such directory");
            directory = sourceArg;
        }

        LocalDirectorySource source(directory);
        const Checkpoint ckpt = readCheckpoint(source);
        const CheckpointAnalysis analysis = analyze(ckpt);
        const CacheBudget cache = computeCacheBudget(ckpt, analysis, cacheOptions);
        const auto report = buildReport(ckpt, analysis, cache);
        if (json)
            std::cout << report.dump(2) << "\n";
        else
            std::cout << formatSummary(ckpt, analysis, cache);
        const auto failures = checkExpectations(report, expectations);
        for (const auto &f : failures)
            std::cerr << f << "\n";
        return failures.empty() ? kExitOk : kExitExpectation;
    } catch (const AtlasError &e) {
        std::cerr << "ckpt-atlas: " << e.what() << "\n";
        if (e.kind() == ErrorKind::Usage)
            std::cerr << "(see 'ckpt-atlas inspect --help')\n";
        return static_cast<int>(e.kind());
    } catch (const std::exception &e) {
        std::cerr << "ckpt-atlas: " << e.what() << "\n";
        return static_cast<int>(ErrorKind::Source);
    }
}

} // namespace atlas
