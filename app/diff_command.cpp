#include "diff_command.h"

#include "command_support.h"
#include "diff.h"
#include "errors.h"
#include "load_pipeline.h"
#include "report.h"

#include <atomic>
#include <functional>
#include <exception>
#include <iostream>
#include <thread>

namespace atlas {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitExpectation = 5;
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
    "  --context N, --kv-dtype bf16|fp8|fp8_ds_mla, --cache-preset NAME, --state-dtype fp32|bf16,\n"
    "  --index-entry-bytes N     as for inspect\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 source or network, 4 invalid checkpoint, 5 expectation failed,\n"
    "            130 interrupted (Ctrl-C)\n";

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
        const std::function<std::string()> value = [&] { return optionValue(args, i); };
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--biases") {
            o.biases = true;
        } else if (a == "--expect") {
            o.expectations.push_back(value());
        } else if (parseSourceAndCacheOption(a, value, o.network, o.cache)) {
        } else if (a.starts_with("--")) {
            throw AtlasError(ErrorKind::Usage, "unknown option " + a);
        } else {
            o.sources.push_back(a);
        }
    }
    if (!o.help && o.sources.size() != 2)
        throw AtlasError(ErrorKind::Usage, "diff takes two sources, A and B (" + std::to_string(o.sources.size()) +
                                               " given)");
    return o;
}

} // namespace

int runDiff(const std::vector<std::string> &args)
{
    return runCommand("diff", [&](const std::atomic<bool> *interrupted) {
        const DiffArgs o = parseDiffArgs(args);
        if (o.help) {
            std::cout << kUsage;
            return kExitOk;
        }

        // Both sides through the one pipeline, at once; a failure names its side.
        LoadResult results[2];
        std::exception_ptr errors[2];
        auto load = [&](int side) {
            try {
                LoadRequest request =
                    sourceRequest(o.sources[static_cast<std::size_t>(side)], {}, o.network, o.cache);
                request.biases = o.biases;
                results[side] = LoadPipeline(std::move(request)).run(interrupted);
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
            diffCheckpoints(*results[0].layout, *results[1].layout, results[0].biases.get(), results[1].biases.get(),
                            interrupted);
        const auto json = diffJson(diff);
        if (o.json)
            std::cout << jsonOutput(json) << "\n";
        else
            printText(std::cout, formatDiff(diff));
        const auto failures = checkExpectations(json, o.expectations);
        for (const auto &f : failures)
            printText(std::cerr, f + "\n");
        return failures.empty() ? kExitOk : kExitExpectation;
    });
}

} // namespace atlas
