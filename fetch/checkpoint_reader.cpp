#include "checkpoint_reader.h"

#include "checkpoint_index.h"
#include "errors.h"
#include "parallel_for.h"

#include <algorithm>
#include <array>
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
// What a guessed first shard is read with, alongside the index, before its size can be estimated.
constexpr std::uint64_t kProbeRead = 128 * 1024;

struct PendingShard
{
    std::string file;
    std::vector<std::string_view> names; // from the index
    std::uint64_t firstRead = kDefaultFirstRead;
    RangeAnswer answer;
    std::uint64_t headerLength = 0;
    bool cached = false;
    bool haveFirst = false; // the first read already came (the probe)
    bool charged = false;   // its header counted against the checkpoint's header budget
};

// Counts header bytes against the checkpoint's budget, naming the shard that went over it.
struct HeaderBudget
{
    std::uint64_t limit;
    std::uint64_t used = 0;
    void charge(const std::string &file, std::uint64_t bytes)
    {
        used += bytes;
        if (used > limit)
            throw AtlasError(ErrorKind::Invalid,
                             file + ": the shard headers of this checkpoint hold more than " +
                                 std::to_string(limit) + " bytes in all (the limit); stopped here");
    }
};

// Reads the first bytes of the given shards in one batch, then the rest of any longer header.
// No read asks for more than a header can hold (8 + kMaxHeaderLength bytes).
void fetchHeaders(ByteSource &source, std::vector<PendingShard> &shards,
                  const std::vector<std::size_t> &which, HeaderBudget &budget)
{
    if (which.empty()) return;
    std::vector<RangeRequest> first;
    std::vector<std::size_t> firstOf;
    for (std::size_t i : which)
        if (!shards[i].haveFirst) {
            first.push_back(
                {shards[i].file, 0, std::min<std::uint64_t>(shards[i].firstRead, 8 + kMaxHeaderLength)});
            firstOf.push_back(i);
        }
    auto answers = first.empty() ? std::vector<RangeAnswer>() : source.readRanges(first);
    for (std::size_t k = 0; k < firstOf.size(); ++k) {
        shards[firstOf[k]].answer = std::move(answers[k]);
        shards[firstOf[k]].haveFirst = true;
    }
    std::vector<RangeRequest> second;
    std::vector<std::size_t> secondOf;
    for (std::size_t k = 0; k < which.size(); ++k) {
        auto &s = shards[which[k]];
        s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
        const std::uint64_t need = 8 + s.headerLength;
        if (!s.charged) {
            budget.charge(s.file, need);
            s.charged = true;
        }
        if (s.answer.bytes.size() < need) {
            second.push_back({s.file, s.answer.bytes.size(), need - s.answer.bytes.size()});
            secondOf.push_back(which[k]);
        } else {
            s.answer.bytes.resize(need);
        }
    }
    if (second.empty()) return;
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
    HeaderBudget budget{options.headerBudget};
    LoadProgress progress;
    std::mutex progressLock;
    auto report = [&](std::size_t files) {
        std::lock_guard lock(progressLock);
        progress.filesDone += files;
        progress.bytes = source.bytesReceived();
        progress.requests = source.requestsMade();
        if (options.progress) options.progress(progress);
    };
    source.setTrafficListener([&] { report(0); });
    struct ListenerReset
    {
        ByteSource &s;
        ~ListenerReset() { s.setTrafficListener({}); }
    } listenerReset{source};

    // Round one: config and index together, with a probe of the first shard when the source can
    // name it (the Hub lists a commit's files), so that its header size is known early.
    const std::array<std::string, 2> smallNames{"config.json", "model.safetensors.index.json"};
    std::array<std::optional<std::string>, 2> small;
    std::vector<std::string> toRead;
    for (std::size_t i = 0; i < smallNames.size(); ++i) {
        std::optional<std::optional<std::string>> cached;
        if (options.cache) cached = options.cache->smallFile(smallNames[i]);
        if (cached)
            small[i] = *cached;
        else
            toRead.push_back(smallNames[i]);
    }
    std::string guess;
    {
        std::vector<std::string> candidates;
        for (const auto &f : source.knownFiles())
            if (f.ends_with(".safetensors") && f.find('/') == std::string::npos) candidates.push_back(f);
        std::sort(candidates.begin(), candidates.end(),
                  [](const std::string &a, const std::string &b) { return naturalLess(a, b); });
        if (!candidates.empty() && !(options.cache && options.cache->shard(candidates.front())))
            guess = candidates.front();
    }
    std::optional<RangeAnswer> probe;
    if (!toRead.empty() || !guess.empty()) {
        std::vector<RangeRequest> speculative;
        if (!guess.empty()) speculative.push_back({guess, 0, kProbeRead});
        BatchAnswer batch = source.readBatch(toRead, speculative);
        for (std::size_t k = 0; k < toRead.size(); ++k) {
            const std::size_t i = toRead[k] == smallNames[0] ? 0 : 1;
            small[i] = std::move(batch.files[k]);
            if (options.cache) options.cache->storeSmallFile(smallNames[i], small[i]);
        }
        if (!batch.ranges.empty()) probe = std::move(batch.ranges.front());
    }

    if (small[0]) {
        ckpt.config = parseModelConfig("config.json", *small[0]);
        ckpt.hasConfig = true;
    }
    ckpt.source = source.info(); // after the first read: a Hub source knows its commit by now

    std::vector<PendingShard> shards;
    std::optional<CheckpointIndex> index;
    if (small[1]) {
        index = parseCheckpointIndex("model.safetensors.index.json", *small[1]);
        for (const auto &file : index->shardFiles)
            shards.push_back({file, {}, 0, {}, 0, false, false, false});
        for (const auto &[tensor, slot] : index->weightMap)
            shards[slot].names.push_back(tensor);
        for (auto &s : shards)
            s.firstRead = estimateHeaderBytes(s.names);
    } else {
        shards.push_back({"model.safetensors", {}, kDefaultFirstRead, {}, 0, false, false, false});
    }
    if (probe) {
        for (auto &s : shards)
            if (s.file == guess) {
                s.answer = std::move(*probe);
                s.haveFirst = true;
            }
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
            // The probe, when it came with the index, or else the first shard now.
            auto probed = std::find_if(toFetch.begin(), toFetch.end(),
                                       [&](std::size_t i) { return shards[i].haveFirst; });
            if (probed == toFetch.end()) probed = toFetch.begin();
            std::iter_swap(toFetch.begin(), probed);
            if (!shards[toFetch.front()].haveFirst)
                fetchHeaders(source, shards, {toFetch.front()}, budget);
            else
                shards[toFetch.front()].headerLength =
                    parseHeaderLength(shards[toFetch.front()].file, shards[toFetch.front()].answer.bytes,
                                      shards[toFetch.front()].answer.fileSize);
            if (!shards[toFetch.front()].charged) {
                budget.charge(shards[toFetch.front()].file, 8 + shards[toFetch.front()].headerLength);
                shards[toFetch.front()].charged = true;
            }
            const PendingShard &probe = shards[toFetch.front()];
            if (index && !probe.names.empty()) {
                std::uint64_t nameBytes = 0;
                for (auto n : probe.names)
                    nameBytes += n.size();
                const std::uint64_t total = 8 + probe.headerLength;
                const double perTensor = static_cast<double>(total > nameBytes ? total - nameBytes : 0) /
                                         static_cast<double>(probe.names.size());
                for (std::size_t k = 1; k < toFetch.size(); ++k) {
                    auto &s = shards[toFetch[k]];
                    std::uint64_t names = 0;
                    for (auto n : s.names)
                        names += n.size();
                    s.firstRead =
                        names +
                        static_cast<std::uint64_t>(perTensor * 1.03 * static_cast<double>(s.names.size())) +
                        256;
                }
            }
            // The rest in one batch, with the remainder of the probe's header if it was longer.
            std::vector<std::size_t> rest(toFetch.begin() + 1, toFetch.end());
            if (probe.answer.bytes.size() < 8 + probe.headerLength) rest.push_back(toFetch.front());
            fetchHeaders(source, shards, rest, budget);
        }
    } catch (const AtlasError &e) {
        if (!index && e.kind() == ErrorKind::Source && !source.isCancelled())
            throw AtlasError(ErrorKind::Source,
                             ckpt.source.location +
                                 ": no model.safetensors.index.json and no model.safetensors (" + e.what() +
                                 ")");
        throw;
    }

    ckpt.shards.resize(shards.size());
    std::vector<char> stale(shards.size(), 0);
    auto parse = [&](std::size_t i) {
        auto &s = shards[i];
        try {
            s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
            if (s.answer.bytes.size() < 8 + s.headerLength)
                throw AtlasError(ErrorKind::Invalid, s.file + ": header shorter than its length prefix");
            s.answer.bytes.resize(8 + s.headerLength); // a speculative read may have brought data bytes too
            const std::string_view json = std::string_view(s.answer.bytes).substr(8, s.headerLength);
            ckpt.shards[i] = parseShardHeader(s.file, json, s.answer.fileSize);
        } catch (const AtlasError &) {
            if (!s.cached) throw;
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
    parallelFor(shards.size(), options.parseThreads, parse);
    std::vector<std::size_t> refetch;
    for (std::size_t i = 0; i < shards.size(); ++i)
        if (stale[i]) {
            shards[i].cached = false;
            shards[i].charged = false;
            shards[i].haveFirst = false;
            shards[i].firstRead = estimateHeaderBytes(shards[i].names);
            refetch.push_back(i);
        }
    if (!refetch.empty()) {
        fetchHeaders(source, shards, refetch, budget);
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
                } else if (index->shardFiles[it->second] != shard.file) {
                    throw AtlasError(ErrorKind::Invalid,
                                     "model.safetensors.index.json: tensor '" + t.name + "' is listed in " +
                                         index->shardFiles[it->second] + " but found in " + shard.file);
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
                                                                 std::string(name) + "' is listed in " +
                                                                 shards[i].file +
                                                                 ", whose header has no such tensor");
            }
        }
        if (!unlisted.empty())
            ckpt.warnings.push_back(std::to_string(unlisted.size()) +
                                    " tensors are in shard headers but not in the index, e.g. " +
                                    unlisted.front());
        if (index->totalSize && *index->totalSize != ckpt.tensorBytes())
            ckpt.warnings.push_back("the index says total_size " + std::to_string(*index->totalSize) +
                                    " but the shard headers hold " + std::to_string(ckpt.tensorBytes()) +
                                    " bytes");
    }
    return ckpt;
}

} // namespace atlas
