#include "checkpoint_reader.h"

#include "checkpoint_index.h"
#include "errors.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

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
    std::vector<std::string_view> names; // from the index
    std::uint64_t firstRead = kDefaultFirstRead;
    RangeAnswer answer;
    std::uint64_t headerLength = 0;
    bool cached = false;
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

// Reads the first bytes of the given shards in one batch, then the rest of any longer header.
void fetchHeaders(ByteSource &source, std::vector<PendingShard> &shards, const std::vector<std::size_t> &which)
{
    if (which.empty())
        return;
    std::vector<RangeRequest> first;
    for (std::size_t i : which)
        first.push_back({shards[i].file, 0, shards[i].firstRead});
    auto answers = source.readRanges(first);
    std::vector<RangeRequest> second;
    std::vector<std::size_t> secondOf;
    for (std::size_t k = 0; k < which.size(); ++k) {
        auto &s = shards[which[k]];
        s.answer = std::move(answers[k]);
        s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
        const std::uint64_t need = 8 + s.headerLength;
        if (s.answer.bytes.size() < need) {
            second.push_back({s.file, s.answer.bytes.size(), need - s.answer.bytes.size()});
            secondOf.push_back(which[k]);
        } else {
            s.answer.bytes.resize(need);
        }
    }
    if (second.empty())
        return;
    auto more = source.readRanges(second);
    for (std::size_t k = 0; k < more.size(); ++k) {
        auto &s = shards[secondOf[k]];
        if (more[k].bytes.size() != second[k].length)
            throw AtlasError(ErrorKind::Invalid, s.file + ": file ended inside its header");
        s.answer.bytes += more[k].bytes;
    }
}

} // namespace

Checkpoint readCheckpoint(ByteSource &source, const ReadOptions &options)
{
    Checkpoint ckpt;
    LoadProgress progress;
    std::mutex progressLock;
    auto report = [&](std::size_t files) {
        std::lock_guard lock(progressLock);
        progress.filesDone += files;
        progress.bytes = source.bytesReceived();
        progress.requests = source.requestsMade();
        if (options.progress)
            options.progress(progress);
    };
    source.setTrafficListener([&] { report(0); });
    struct ListenerReset
    {
        ByteSource &s;
        ~ListenerReset() { s.setTrafficListener({}); }
    } listenerReset{source};

    auto smallFile = [&](const std::string &name) -> std::optional<std::string> {
        if (options.cache)
            if (auto cached = options.cache->smallFile(name))
                return *cached;
        auto content = source.readSmallFile(name);
        if (options.cache)
            options.cache->storeSmallFile(name, content);
        return content;
    };

    if (auto config = smallFile("config.json")) {
        ckpt.config = parseModelConfig("config.json", *config);
        ckpt.hasConfig = true;
    }
    ckpt.source = source.info(); // after the first read: a Hub source knows its commit by now

    std::vector<PendingShard> shards;
    std::optional<CheckpointIndex> index;
    if (auto text = smallFile("model.safetensors.index.json")) {
        index = parseCheckpointIndex("model.safetensors.index.json", *text);
        std::unordered_map<std::string_view, std::size_t> slot;
        for (const auto &file : index->shardFiles) {
            slot[file] = shards.size();
            shards.push_back({file, {}, 0, {}, 0, false});
        }
        for (const auto &[tensor, file] : index->weightMap)
            shards[slot[file]].names.push_back(tensor);
        for (auto &s : shards)
            s.firstRead = estimateHeaderBytes(s.names);
    } else {
        shards.push_back({"model.safetensors", {}, kDefaultFirstRead, {}, 0, false});
    }
    progress.filesTotal = shards.size();

    std::vector<std::size_t> toFetch;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        if (options.cache) {
            if (auto c = options.cache->shard(shards[i].file)) {
                shards[i].answer.bytes = std::move(c->header);
                shards[i].answer.fileSize = c->fileSize;
                shards[i].cached = true;
                continue;
            }
        }
        toFetch.push_back(i);
    }

    try {
        // One shard first, with a generous guess; what its header costs per tensor then sizes the
        // guesses for all the others, which go out together.
        if (!toFetch.empty()) {
            fetchHeaders(source, shards, {toFetch.front()});
            const PendingShard &probe = shards[toFetch.front()];
            if (index && !probe.names.empty()) {
                std::uint64_t nameBytes = 0;
                for (auto n : probe.names)
                    nameBytes += n.size();
                const std::uint64_t total = 8 + probe.headerLength;
                const double perTensor =
                    static_cast<double>(total > nameBytes ? total - nameBytes : 0) / static_cast<double>(probe.names.size());
                for (std::size_t k = 1; k < toFetch.size(); ++k) {
                    auto &s = shards[toFetch[k]];
                    std::uint64_t names = 0;
                    for (auto n : s.names)
                        names += n.size();
                    s.firstRead = names + static_cast<std::uint64_t>(perTensor * 1.03 * static_cast<double>(s.names.size())) + 256;
                }
            }
            fetchHeaders(source, shards, {toFetch.begin() + 1, toFetch.end()});
        }
    } catch (const AtlasError &e) {
        if (!index && e.kind() == ErrorKind::Source && !source.isCancelled())
            throw AtlasError(ErrorKind::Source,
                             ckpt.source.location + ": no model.safetensors.index.json and no model.safetensors (" +
                                 e.what() + ")");
        throw;
    }

    ckpt.shards.resize(shards.size());
    std::vector<char> stale(shards.size(), 0);
    const unsigned threads = options.parseThreads ? options.parseThreads : std::max(1u, std::thread::hardware_concurrency());
    auto parse = [&](std::size_t i) {
        auto &s = shards[i];
        try {
            s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
            if (s.answer.bytes.size() < 8 + s.headerLength)
                throw AtlasError(ErrorKind::Invalid, s.file + ": header shorter than its length prefix");
            const std::string_view json = std::string_view(s.answer.bytes).substr(8, s.headerLength);
            ckpt.shards[i] = parseShardHeader(s.file, json, s.answer.fileSize);
        } catch (const AtlasError &) {
            if (!s.cached)
                throw;
            stale[i] = 1; // a damaged cache entry: read the shard again
            return;
        }
        for (auto &t : ckpt.shards[i].tensors)
            t.shard = static_cast<std::uint32_t>(i);
        if (options.cache && !s.cached)
            options.cache->storeShard(s.file, {s.answer.bytes, s.answer.fileSize});
        std::string().swap(s.answer.bytes);
        report(1);
    };
    parallelFor(shards.size(), threads, parse);
    std::vector<std::size_t> refetch;
    for (std::size_t i = 0; i < shards.size(); ++i)
        if (stale[i]) {
            shards[i].cached = false;
            shards[i].firstRead = estimateHeaderBytes(shards[i].names);
            refetch.push_back(i);
        }
    if (!refetch.empty()) {
        fetchHeaders(source, shards, refetch);
        for (std::size_t i : refetch)
            parse(i);
    }

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
            for (std::size_t i = 0; i < shards.size(); ++i) {
                std::unordered_set<std::string_view> present;
                for (const auto &t : ckpt.shards[i].tensors)
                    present.insert(t.name);
                for (auto name : shards[i].names)
                    if (!present.count(name))
                        throw AtlasError(ErrorKind::Invalid, "model.safetensors.index.json: tensor '" +
                                                                 std::string(name) + "' is listed in " + shards[i].file +
                                                                 ", whose header has no such tensor");
            }
        }
        if (!unlisted.empty())
            ckpt.warnings.push_back(std::to_string(unlisted.size()) +
                                    " tensors are in shard headers but not in the index, e.g. " + unlisted.front());
        if (index->totalSize && *index->totalSize != ckpt.tensorBytes())
            ckpt.warnings.push_back("the index says total_size " + std::to_string(*index->totalSize) +
                                    " but the shard headers hold " + std::to_string(ckpt.tensorBytes()) + " bytes");
    }
    return ckpt;
}

} // namespace atlas
