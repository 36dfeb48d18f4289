#include "diff_command.h"

#include "diff.h"
#include "errors.h"
#include "load_pipeline.h"
#include "report.h"

#include <atomic>
#include <charconv>
#include <csignal>
#include <exception>
#include <iostream>
#include <thread>

namespace atlas {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitExpectation = 5;
constexpr int kExitInterrupted = 130;

const char *kUsage =
    "usage: ckpt-atlas diff A B [options]\n"
    "\n"
    "Compares two checkpoints header against header: config.json keys, tensor names, dtypes and shapes\n"
    "(grouped, layer and expert numbers collapsed into ranges), logical parameters and bytes by category,\n"
    "quantization formats, indexer layers and cache bytes per token. A and B are any two sources: local\n"
    "folders, hf://ORG/NAME[@REV] on the Hub ($HF_ENDPOINT), https://HOST/DIR/ directories, mixed.\n"
    "\n"
    "  --json                    print the ckpt-atlas.diff/1 JSON\n"
    "  --biases                  read both checkpoints' router biases (exact byte ranges) and compare them\n"
    "                            byte for byte, with their dtypes and BF16 level counts\n"
    "  --expect PATH=VALUE       fail with exit 5 unless the diff has VALUE at PATH (repeatable)\n"
    "  --ca-bundle FILE, --connections N, --timeout SECONDS, --no-cache   as for inspect\n"
    "  --context N, --kv-dtype bf16|fp8|fp8_ds_mla, --cache-preset NAME, --index-entry-bytes N   as for inspect\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 source or network, 4 invalid checkpoint, 5 expectation failed,\n"
    "            130 interrupted (Ctrl-C)\n";

std::atomic<bool> g_interrupted{false};
extern "C" void onDiffInterrupt(int)
{
    g_interrupted.store(true);
}

std::uint64_t parseCount(const std::string &option, const std::string &value, std::uint64_t max)
{
    std::uint64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec != std::errc() || r.ptr != value.data() + value.size() || v == 0)
        throw AtlasError(ErrorKind::Usage, option + " takes a positive whole number, not '" + value + "'");
    if (v > max)
        throw AtlasError(ErrorKind::Usage, option + " " + value + " is above the limit of " + std::to_string(max));
    return v;
}

struct DiffArgs
{
    bool help = false, json = false, biases = false;
    std::vector<std::string> sources;
    std::vector<std::string> expectations;
    NetworkOptions network;
    CacheOptions cache;
};

DiffArgs parseDiffArgs(const std::vector<std::string> &args)
{
    DiffArgs o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) throw AtlasError(ErrorKind::Usage, a + " needs a value");
            return args[++i];
        };
        if (a == "-h" || a == "--help")
            o.help = true;
        else if (a == "--json")
            o.json = true;
        else if (a == "--biases")
            o.biases = true;
        else if (a == "--expect")
            o.expectations.push_back(value());
        else if (a == "--ca-bundle")
            o.network.caBundle = value();
        else if (a == "--connections")
            o.network.connections = static_cast<int>(parseCount(a, value(), 256));
        else if (a == "--timeout")
            o.network.timeoutSeconds = static_cast<long>(parseCount(a, value(), 7 * 24 * 3600));
        else if (a == "--no-cache")
            o.network.useCache = false;
        else if (a == "--context")
            o.cache.contextTokens = parseCount(a, value(), UINT64_MAX);
        else if (a == "--cache-preset") {
            const std::string v = value();
            auto preset = cachePresetFromName(v);
            if (!preset)
                throw AtlasError(ErrorKind::Usage,
                                 "--cache-preset takes article, vllm, vllm-mtp or atom, not '" + v + "'");
            o.cache.preset = *preset;
        } else if (a == "--index-entry-bytes")
            o.cache.indexEntryBytes = static_cast<std::int64_t>(parseCount(a, value(), 1 << 20));
        else if (a == "--kv-dtype") {
            const std::string v = value();
            auto k = kvDtypeFromName(v);
            if (!k) throw AtlasError(ErrorKind::Usage, "--kv-dtype takes bf16, fp8 or fp8_ds_mla, not '" + v + "'");
            o.cache.kvDtype = *k;
        } else if (a.starts_with("--"))
            throw AtlasError(ErrorKind::Usage, "unknown option " + a);
        else
            o.sources.push_back(a);
    }
    if (!o.help && o.sources.size() != 2)
        throw AtlasError(ErrorKind::Usage, "diff takes two sources, A and B (" + std::to_string(o.sources.size()) +
                                               " given)");
    return o;
}

} // namespace

int runDiff(const std::vector<std::string> &args)
{
    try {
        const DiffArgs o = parseDiffArgs(args);
        if (o.help) {
            std::cout << kUsage;
            return kExitOk;
        }
        struct sigaction action = {};
        action.sa_handler = onDiffInterrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, nullptr);

        // Both sides through the one pipeline, at once; a failure names its side.
        LoadResult results[2];
        std::exception_ptr errors[2];
        auto load = [&](int side) {
            try {
                LoadRequest request;
                request.spec = parseSourceSpec(o.sources[static_cast<std::size_t>(side)], {});
                request.network = o.network;
                request.cache = o.cache;
                request.biases = o.biases;
                results[side] = LoadPipeline(std::move(request)).run(&g_interrupted);
            } catch (...) {
                errors[side] = std::current_exception();
            }
        };
        std::thread other(load, 1);
        load(0);
        other.join();
        for (int side = 0; side < 2; ++side) {
            if (!errors[side]) continue;
            try {
                std::rethrow_exception(errors[side]);
            } catch (const AtlasError &e) {
                throw AtlasError(e.kind(), std::string(side ? "B" : "A") + " (" + o.sources[std::size_t(side)] +
                                               "): " + e.what());
            }
        }
        for (const auto &r : results)
            if (r.layout->cache.kvDtypeMisfit)
                throw AtlasError(ErrorKind::Usage, "--kv-dtype: " + r.layout->cache.reason);

        const CheckpointDiff diff =
            diffCheckpoints(*results[0].layout, *results[1].layout, results[0].biases.get(), results[1].biases.get());
        const auto json = diffJson(diff);
        if (o.json)
            std::cout << json.dump(2) << "\n";
        else
            std::cout << formatDiff(diff);
        const auto failures = checkExpectations(json, o.expectations);
        for (const auto &f : failures)
            std::cerr << f << "\n";
        return failures.empty() ? kExitOk : kExitExpectation;
    } catch (const AtlasError &e) {
        if (g_interrupted) {
            std::cerr << "ckpt-atlas: interrupted\n";
            return kExitInterrupted;
        }
        std::cerr << "ckpt-atlas: " << e.what() << "\n";
        if (e.kind() == ErrorKind::Usage) std::cerr << "(see 'ckpt-atlas diff --help')\n";
        return static_cast<int>(e.kind());
    } catch (const std::bad_alloc &) {
        std::cerr << "ckpt-atlas: out of memory\n";
        return static_cast<int>(ErrorKind::Invalid);
    } catch (const std::exception &e) {
        std::cerr << "ckpt-atlas: " << e.what() << "\n";
        return static_cast<int>(ErrorKind::Source);
    }
}

} // namespace atlas
