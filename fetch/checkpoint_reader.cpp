#include "checkpoint_reader.h"

#include "checkpoint_index.h"
#include "errors.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace atlas {

std::uint64_t estimateHeaderBytes(const std::vector<std::string_view> &names)
{
    // `"NAME":{"dtype":"F8_E4M3","shape":[16384,2048],"data_offsets":[10000000000,10033554432]},`
    // costs the name plus at most about 100 bytes for rank-2 shapes.
    std::uint64_t n = 8 + 128; // length prefix, braces and __metadata__
    for (auto name : names)
        n += name.size() + 100;
    return n;
}

namespace {

constexpr std::uint64_t kDefaultFirstRead = 256 * 1024;

struct PendingShard
{
    std::string file;
    std::uint64_t firstRead = kDefaultFirstRead;
    RangeAnswer answer;
    std::uint64_t headerLength = 0;
};

// Runs fn(i) for i in [0, n) on a few threads; rethrows the first failure.
template<typename Fn>
void parallelFor(std::size_t n, unsigned threads, Fn fn)
{
    threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(n)));
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex errorLock;
    auto worker = [&] {
        for (;;) {
            const std::size_t i = next.fetch_add(1);
            if (i >= n)
                return;
            try {
                fn(i);
            } catch (...) {
                std::lock_guard lock(errorLock);
                if (!error)
                    error = std::current_exception();
                next.store(n);
                return;
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (auto &t : pool)
        t.join();
    if (error)
        std::rethrow_exception(error);
}

} // namespace

Checkpoint readCheckpoint(ByteSource &source, const ReadOptions &options)
{
    Checkpoint ckpt;
    ckpt.source = source.info();
    LoadProgress progress;
    std::mutex progressLock;
    auto report = [&](std::size_t files, std::uint64_t bytes, std::uint64_t requests) {
        std::lock_guard lock(progressLock);
        progress.filesDone += files;
        progress.bytes += bytes;
        progress.requests += requests;
        if (options.progress)
            options.progress(progress);
    };

    if (auto config = source.readSmallFile("config.json")) {
        ckpt.config = parseModelConfig("config.json", *config);
        ckpt.hasConfig = true;
        report(0, config->size(), 1);
    }

    std::vector<PendingShard> shards;
    std::optional<CheckpointIndex> index;
    if (auto text = source.readSmallFile("model.safetensors.index.json")) {
        report(0, text->size(), 1);
        index = parseCheckpointIndex("model.safetensors.index.json", *text);
        std::unordered_map<std::string_view, std::vector<std::string_view>> namesByFile;
        for (const auto &[tensor, file] : index->weightMap)
            namesByFile[file].push_back(tensor);
        for (const auto &file : index->shardFiles)
            shards.push_back({file, estimateHeaderBytes(namesByFile[file]), {}, 0});
    } else {
        shards.push_back({"model.safetensors", kDefaultFirstRead, {}, 0});
    }
    progress.filesTotal = shards.size();

    // Round one: one ranged read per shard, sized to hold the whole header in the usual case.
    std::vector<RangeRequest> first;
    for (const auto &s : shards)
        first.push_back({s.file, 0, s.firstRead});
    try {
        auto answers = source.readRanges(first);
        for (std::size_t i = 0; i < shards.size(); ++i)
            shards[i].answer = std::move(answers[i]);
    } catch (const AtlasError &e) {
        if (!index && e.kind() == ErrorKind::Source && !source.isCancelled())
            throw AtlasError(ErrorKind::Source,
                             ckpt.source.location + ": no model.safetensors.index.json and no model.safetensors (" +
                                 e.what() + ")");
        throw;
    }
    std::uint64_t bytes = 0;
    for (const auto &s : shards)
        bytes += s.answer.bytes.size();
    report(0, bytes, shards.size());

    // Round two: the rest of any header longer than the first read.
    std::vector<RangeRequest> second;
    std::vector<std::size_t> secondOf;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        auto &s = shards[i];
        s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
        const std::uint64_t need = 8 + s.headerLength;
        if (s.answer.bytes.size() < need) {
            second.push_back({s.file, s.answer.bytes.size(), need - s.answer.bytes.size()});
            secondOf.push_back(i);
        }
    }
    if (!second.empty()) {
        auto answers = source.readRanges(second);
        std::uint64_t more = 0;
        for (std::size_t k = 0; k < answers.size(); ++k) {
            auto &s = shards[secondOf[k]];
            if (answers[k].bytes.size() != second[k].length)
                throw AtlasError(ErrorKind::Invalid, s.file + ": file ended inside its header");
            more += answers[k].bytes.size();
            s.answer.bytes += answers[k].bytes;
        }
        report(0, more, second.size());
    }

    ckpt.shards.resize(shards.size());
    const unsigned threads = options.parseThreads ? options.parseThreads : std::max(1u, std::thread::hardware_concurrency());
    parallelFor(shards.size(), threads, [&](std::size_t i) {
        auto &s = shards[i];
        const std::string_view json = std::string_view(s.answer.bytes).substr(8, s.headerLength);
        ckpt.shards[i] = parseShardHeader(s.file, json, s.answer.fileSize);
        for (auto &t : ckpt.shards[i].tensors)
            t.shard = static_cast<std::uint32_t>(i);
        std::string().swap(s.answer.bytes);
        report(1, 0, 0);
    });

    if (index) {
        // Every tensor the index names must be in the shard it names, and the other way round.
        std::size_t matched = 0;
        std::vector<std::string> unlisted;
        for (const auto &shard : ckpt.shards) {
            for (const auto &t : shard.tensors) {
                auto it = index->weightMap.find(t.name);
                if (it == index->weightMap.end()) {
                    unlisted.push_back(t.name + " (in " + shard.file + ")");
                } else if (it->second != shard.file) {
                    throw AtlasError(ErrorKind::Invalid, "model.safetensors.index.json: tensor '" + t.name +
                                                             "' is listed in " + it->second + " but found in " +
                                                             shard.file);
                } else {
                    ++matched;
                }
            }
        }
        if (matched != index->weightMap.size()) {
            for (const auto &[tensor, file] : index->weightMap) {
                const auto &shard = *std::find_if(ckpt.shards.begin(), ckpt.shards.end(),
                                                  [&](const ShardHeader &h) { return h.file == file; });
                const bool present = std::any_of(shard.tensors.begin(), shard.tensors.end(),
                                                 [&](const TensorInfo &t) { return t.name == tensor; });
                if (!present)
                    throw AtlasError(ErrorKind::Invalid, "model.safetensors.index.json: tensor '" + tensor +
                                                             "' is listed in " + file + ", whose header has no such tensor");
            }
        }
        if (!unlisted.empty())
            ckpt.warnings.push_back(std::to_string(unlisted.size()) + " tensors are in shard headers but not in the index, e.g. " +
                                    unlisted.front());
        if (index->totalSize && *index->totalSize != ckpt.tensorBytes())
            ckpt.warnings.push_back("the index says total_size " + std::to_string(*index->totalSize) +
                                    " but the shard headers hold " + std::to_string(ckpt.tensorBytes()) + " bytes");
    }
    return ckpt;
}

} // namespace atlas
