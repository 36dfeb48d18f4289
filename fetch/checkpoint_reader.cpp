#include "checkpoint_reader.h"

#include "checkpoint_index.h"
#include "gguf_reader.h"
#include "errors.h"
#include "parallel_for.h"
#include "populate.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace atlas {

std::uint64_t estimateHeaderBytes(std::span<const std::string_view> names)
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
// What a guessed first read allows per tensor beyond its name (a rank-4 entry with large offsets
// takes about 110 bytes).
constexpr double kMaxGuessPerTensor = 512;
// Shards located in the index's batch at most (the rest are resolved when read, as before).
constexpr std::size_t kMaxLocated = 4096;

struct PendingShard
{
    std::string file;
    std::span<const std::string_view> names{}; // the index's, sorted
    std::uint64_t firstRead = kDefaultFirstRead;
    RangeAnswer answer{};
    std::uint64_t headerLength = 0;
    bool cached = false;
    bool haveFirst = false; // the first read already came (the probe)
    std::uint64_t held = 0; // bytes of this shard counted against the checkpoint's header budget
    ListedNames listed{};   // what the parse found of `names`
    bool handedOn = false; // its whole header came and went to be parsed while the batch goes on
};

// Counts header bytes against the checkpoint's budget before they are read, naming the shard that
// would go over it. A first read is granted what is left at most; a header that then needs more than
// is left stops the load.
struct HeaderBudget
{
    std::uint64_t limit;
    std::uint64_t used = 0;
    std::mutex lock{}; // a local folder's shards are read on several threads at once
    [[noreturn]] void over(const std::string &file) const
    {
        throw AtlasError(ErrorKind::Invalid, file + ": the shard headers of this checkpoint hold more than " +
                                                 std::to_string(limit) + " bytes in all (the limit); stopped here");
    }
    // What a first read of `wanted` bytes may ask for: what is left, and at least the 8-byte length
    // prefix. A guess never refuses a load by itself; only a header's real length can (charge).
    std::uint64_t grant(std::uint64_t wanted)
    {
        std::lock_guard hold(lock);
        const std::uint64_t left = limit > used ? limit - used : 0;
        const std::uint64_t granted = std::min(wanted, std::max<std::uint64_t>(left, 8));
        used += granted;
        return granted;
    }
    void charge(const std::string &file, std::uint64_t bytes)
    {
        std::lock_guard hold(lock);
        used += bytes;
        if (used > limit) over(file);
    }
    void release(std::uint64_t bytes)
    {
        std::lock_guard hold(lock);
        used -= std::min(bytes, used);
    }
    std::uint64_t left()
    {
        std::lock_guard hold(lock);
        return limit > used ? limit - used : 0;
    }
};

// A shard name of a numbered set, "model-00003-of-00141.safetensors": its prefix ("model-"), the width
// of its numbers (5) and the set's size (141); nullopt for any other name.
struct ShardSet
{
    std::string_view prefix;
    std::size_t digits = 0;
    std::size_t count = 0;
};
std::optional<ShardSet> shardSetOf(std::string_view name)
{
    constexpr std::string_view ext = ".safetensors";
    if (!name.ends_with(ext)) return std::nullopt;
    name.remove_suffix(ext.size());
    const auto of = name.rfind("-of-");
    if (of == std::string_view::npos) return std::nullopt;
    const std::string_view total = name.substr(of + 4), head = name.substr(0, of);
    const auto dash = head.rfind('-');
    if (dash == std::string_view::npos) return std::nullopt;
    const std::string_view number = head.substr(dash + 1);
    auto allDigits = [](std::string_view d) {
        return !d.empty() && d.size() <= 6 && d.find_first_not_of("0123456789") == std::string_view::npos;
    };
    if (!allDigits(total) || number.size() != total.size() || !allDigits(number)) return std::nullopt;
    return ShardSet{head.substr(0, dash + 1), total.size(), static_cast<std::size_t>(std::stoul(std::string(total)))};
}

// Holds a shard's answer at its header (8 + headerLength bytes, or up to half more), charging the budget for what
// more is needed before it is read, and giving back what a longer first read brought beyond it.
// Returns how many bytes are still to be read.
std::uint64_t settleHeader(PendingShard &s, HeaderBudget &budget)
{
    s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
    const std::uint64_t need = 8 + s.headerLength;
    const std::uint64_t have = s.answer.bytes.size();
    // A speculative read may have brought data bytes too: given back when they are more than half the
    // header, else kept (and still charged) until the header is parsed, which frees the bytes and gives the
    // tail's charge back (parseOne). A local shard is parsed by the thread that read it, at once: copying a
    // header of megabytes into a buffer of its size to return a fraction of it was 4 % of Kimi-K3's open
    // (its guesses, 100 bytes a tensor beyond the name, are 20-40 % long there).
    const bool keepTail = have > need && have - need <= need / 2;
    const std::uint64_t hold = keepTail ? have : need;
    if (hold > s.held) {
        budget.charge(s.file, hold - s.held);
    } else {
        budget.release(s.held - hold);
    }
    s.held = hold;
    if (have >= need) {
        s.answer.bytes.resize(need);
        if (!keepTail) s.answer.bytes.shrink_to_fit();
        return 0;
    }
    return need - have;
}

// Reads the first bytes of the given shards in one batch, then the rest of any longer header.
// No read asks for more than a header can hold (8 + kMaxHeaderLength bytes), and every byte is
// granted by the budget before it is asked for. With `whole`, a shard whose first answer holds its
// whole header is settled and handed to it as soon as that answer comes, while the batch goes on; the
// shard is then another thread's and is not touched here again.
void fetchHeaders(ByteSource &source, std::vector<PendingShard> &shards,
                  const std::vector<std::size_t> &which, HeaderBudget &budget,
                  const std::function<void(std::size_t)> &whole = {})
{
    if (which.empty()) return;
    std::vector<RangeRequest> first;
    std::vector<std::size_t> firstOf;
    for (std::size_t i : which)
        if (!shards[i].haveFirst) {
            const std::uint64_t wanted = std::min<std::uint64_t>(shards[i].firstRead, 8 + kMaxHeaderLength);
            const std::uint64_t granted = budget.grant(wanted);
            shards[i].held += granted;
            first.push_back({shards[i].file, 0, granted});
            firstOf.push_back(i);
        }
    if (!first.empty())
        source.readRangesEach(first, [&](std::size_t k, RangeAnswer &&answer) {
            auto &s = shards[firstOf[k]];
            s.answer = std::move(answer);
            s.haveFirst = true;
            if (!whole) return;
            try {
                // Only what certainly holds its header; anything else (a longer header, a bad length
                // prefix) is settled below, after the batch, in request order, as without `whole`.
                if (8 + parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize) > s.held) return;
                settleHeader(s, budget); // gives back what the guess brought beyond the header
            } catch (const AtlasError &) {
                return;
            }
            s.handedOn = true;
            whole(firstOf[k]);
        });
    // Shards whose first read held their whole header give back the rest first; only then are the
    // longer ones charged for what they still need, so that no guess counts twice.
    std::vector<RangeRequest> second;
    std::vector<std::size_t> secondOf;
    for (int pass = 0; pass < 2; ++pass)
        for (std::size_t k = 0; k < which.size(); ++k) {
            auto &s = shards[which[k]];
            if (s.handedOn) continue;
            const std::uint64_t need = 8 + parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
            if ((need <= s.held) != (pass == 0)) continue;
            if (const std::uint64_t missing = settleHeader(s, budget)) {
                second.push_back({s.file, s.answer.bytes.size(), missing});
                secondOf.push_back(which[k]);
            }
        }
    if (second.empty()) return;
    auto more = source.readRanges(second);
    for (std::size_t k = 0; k < more.size(); ++k) {
        auto &s = shards[secondOf[k]];
        if (more[k].bytes.size() != second[k].length)
            throw AtlasError(ErrorKind::Invalid, s.file + ": file ended inside its header (" +
                                                     std::to_string(s.answer.bytes.size() + more[k].bytes.size()) +
                                                     " of " + std::to_string(8 + s.headerLength) + " bytes)");
        s.answer.bytes += more[k].bytes;
    }
}

// Parses headers on one more thread while the batch that brings them is still coming in (the calling
// thread drives the transfers). The first failure is kept and told by finish(); what is handed after it
// is not parsed. Destroyed without finish() (the batch failed), it stops and its failure is dropped:
// the batch's own is the one told.
class ParseAhead
{
public:
    explicit ParseAhead(std::function<void(std::size_t)> parse)
        : m_parse(std::move(parse)), m_thread([this] { work(); })
    {
    }
    ~ParseAhead() { stop(); }
    ParseAhead(const ParseAhead &) = delete;
    ParseAhead &operator=(const ParseAhead &) = delete;

    void hand(std::size_t i)
    {
        {
            std::lock_guard hold(m_lock);
            m_queue.push_back(i);
        }
        m_wake.notify_one();
    }
    // Waits for everything handed so far; rethrows the first failure.
    void finish()
    {
        stop();
        if (m_error) std::rethrow_exception(m_error);
    }

private:
    void stop()
    {
        {
            std::lock_guard hold(m_lock);
            m_closed = true;
        }
        m_wake.notify_one();
        if (m_thread.joinable()) m_thread.join();
    }
    void work()
    {
        std::size_t next = 0;
        for (;;) {
            std::size_t i;
            {
                std::unique_lock hold(m_lock);
                m_wake.wait(hold, [&] { return next < m_queue.size() || m_closed; });
                if (next >= m_queue.size()) return;
                i = m_queue[next++];
            }
            if (m_error) continue; // the load fails with the first; the rest is not parsed
            try {
                m_parse(i);
            } catch (...) {
                m_error = std::current_exception();
            }
        }
    }
    std::function<void(std::size_t)> m_parse;
    std::mutex m_lock;
    std::condition_variable m_wake;
    std::vector<std::size_t> m_queue;
    bool m_closed = false;
    std::exception_ptr m_error; // the worker's until joined
    std::thread m_thread;
};

// One read of a checkpoint, step by step: the small files (with a probe of the first shard), the
// shard list, what the header cache already holds, the headers themselves, their parsing, and the
// cross-check of the index against what the headers say.
class CheckpointRead
{
public:
    CheckpointRead(ByteSource &source, const ReadOptions &options)
        : m_source(source), m_options(options), m_budget{options.headerBudget}
    {
        m_source.setTrafficListener([this] { reportProgress(0); });
    }
    ~CheckpointRead() { m_source.setTrafficListener({}); }
    CheckpointRead(const CheckpointRead &) = delete;
    CheckpointRead &operator=(const CheckpointRead &) = delete;

    Checkpoint run()
    {
        readSmallFiles();
        listShards();
        const std::vector<std::size_t> toFetch = takeCached();
        // A local folder's headers are read and parsed shard by shard on every core, each freed once
        // parsed: the 76 MB of Kimi-K3's headers are never in memory at once. Remote headers come in
        // batches first (one round trip for all), then are parsed.
        const bool streamed = m_source.info().kind == SourceKind::Local;
        try {
            if (streamed)
                parseAll(toFetch);
            else
                fetchShardHeaders(toFetch);
        } catch (const AtlasError &e) {
            // Only a model.safetensors that is not there means "no index and no single file"; a
            // server that fails or closes while sending it is told as what it is.
            if (!m_index && e.problem() == HeaderProblem::MissingFile && !m_source.isCancelled())
                throw AtlasError(ErrorKind::Source,
                                 m_ckpt.source.location +
                                     ": no model.safetensors.index.json and no model.safetensors (" +
                                     e.what() + ")");
            throw;
        }
        if (!streamed) parseAll({});
        checkTotals();
        if (m_index) crossCheckIndex();
        return std::move(m_ckpt);
    }

private:
    void reportProgress(std::size_t files)
    {
        std::lock_guard lock(m_progressLock);
        m_progress.filesDone += files;
        m_progress.bytes = m_source.bytesReceived();
        m_progress.requests = m_source.requestsMade();
        if (m_options.progress) m_options.progress(m_progress);
    }

    // Round one: config and index together, with a probe of the first shard when the source can
    // name it (the Hub lists a commit's files), so that its header size is known early.
    void readSmallFiles()
    {
        // ModelOpt's hf_quant_config.json too (NVFP4 experts declared outside config.json). It is optional:
        // in the same round trip where a listing names it (the Hub) or the folder is local; from an HTTPS
        // directory on its own afterwards, where any answer but the file (a 403 for a missing key) or a
        // file that does not parse is a warning, never the load's failure.
        const std::array<std::string, 3> smallNames{"config.json", "model.safetensors.index.json",
                                                    "hf_quant_config.json"};
        std::array<std::optional<std::string>, 3> small;
        std::array<bool, 3> fresh{false, false, false}; // read now, not taken from the cache
        std::vector<std::string> toRead;
        const std::vector<std::string> listed = m_source.knownFiles();
        const bool local = m_source.info().kind == SourceKind::Local;
        const bool sidecarInBatch =
            local || (!listed.empty() && std::find(listed.begin(), listed.end(), smallNames[2]) != listed.end());
        bool sidecarApart = false;
        bool viewIndex = false;
        for (std::size_t i = 0; i < smallNames.size(); ++i) {
            if (i == 2 && !sidecarInBatch) {
                sidecarApart = listed.empty(); // a listing without it: not there
                if (!sidecarApart) continue;
            }
            std::optional<std::optional<std::string>> cached;
            if (m_options.cache) cached = m_options.cache->smallFile(smallNames[i]);
            if (cached)
                small[i] = *cached;
            else if (i == 2 && sidecarApart)
                ; // read apart, below
            else if (i == 1 && local)
                viewIndex = true; // parsed where it lies, below
            else
                toRead.push_back(smallNames[i]);
            if (i == 2 && cached) sidecarApart = false;
        }
        std::vector<std::string> candidates;
        for (const auto &f : listed)
            if (f.ends_with(".safetensors") && f.find('/') == std::string::npos) candidates.push_back(f);
        std::sort(candidates.begin(), candidates.end(),
                  [](const std::string &a, const std::string &b) { return naturalLess(a, b); });
        if (!candidates.empty() && !(m_options.cache && m_options.cache->hasShard(candidates.front())))
            m_guess = candidates.front();
        // The Hub answers each shard's resolve with a redirect to its storage. Learned in this batch, while
        // the index downloads, each header is then one range read to the storage, with no resolve before it
        // (a round trip less). Only the probed shard's set: "model-00001-of-00141.safetensors" locates the
        // other "model-NNNNN-of-00141.safetensors", at most 140 of them (and kMaxLocated), whatever else the listing holds.
        std::vector<std::string> locate;
        if (!local && m_source.info().kind == SourceKind::Hub && !m_guess.empty())
            if (const auto set = shardSetOf(m_guess))
                for (const auto &f : candidates) {
                    if (locate.size() + 1 >= std::min<std::size_t>(set->count, kMaxLocated)) break;
                    const auto other = shardSetOf(f);
                    if (f != m_guess && other && other->prefix == set->prefix && other->count == set->count &&
                        other->digits == set->digits && !(m_options.cache && m_options.cache->hasShard(f)))
                        locate.push_back(f);
                }
        if (!toRead.empty() || !m_guess.empty()) {
            std::vector<RangeRequest> speculative;
            if (!m_guess.empty()) {
                m_probeHeld = m_budget.grant(kProbeRead);
                speculative.push_back({m_guess, 0, m_probeHeld});
            }
            BatchAnswer batch = m_source.readBatch(toRead, speculative, locate);
            for (std::size_t k = 0; k < toRead.size(); ++k) {
                const std::size_t i = static_cast<std::size_t>(
                    std::find(smallNames.begin(), smallNames.end(), toRead[k]) - smallNames.begin());
                small[i] = std::move(batch.files[k]);
                fresh[i] = true;
            }
            if (!batch.ranges.empty()) m_probe = std::move(batch.ranges.front());
        }
        if (small[0]) {
            m_ckpt.config = parseModelConfig("config.json", *small[0]);
            m_ckpt.hasConfig = true;
        }
        if (sidecarApart) {
            try {
                small[2] = m_source.readSmallFile(smallNames[2]);
                fresh[2] = true;
            } catch (const AtlasError &e) {
                if (m_source.isCancelled()) throw;
                m_ckpt.warnings.push_back(std::string("hf_quant_config.json could not be read (") + e.what() +
                                          "); ignored");
            }
        }
        if (small[2]) {
            try {
                if (auto w = readHfQuantConfig(*small[2], m_ckpt.config)) m_ckpt.warnings.push_back(std::move(*w));
            } catch (const AtlasError &e) {
                m_ckpt.warnings.push_back(std::string(e.what()) + "; the file is ignored");
                fresh[2] = false;
            }
        }
        m_ckpt.source = m_source.info(); // after the first read: a Hub source knows its commit by now
        if (viewIndex)
            m_source.viewSmallFile(smallNames[1], [&](std::string_view text) {
                m_index = parseCheckpointIndex(smallNames[1], text, m_source.cancelFlag());
            });
        else if (small[1])
            m_index = parseCheckpointIndex(smallNames[1], *small[1], m_source.cancelFlag());
        if (m_index)
            for (auto &w : m_index->warnings)
                m_ckpt.warnings.push_back(std::move(w));
        // Kept only once accepted: a file that failed to parse is read again next time, not replayed.
        if (m_options.cache)
            for (std::size_t i = 0; i < smallNames.size(); ++i)
                if (fresh[i]) m_options.cache->storeSmallFile(smallNames[i], small[i]);
    }

    // The shards the index names (or the single model.safetensors), with a first-read guess each.
    void listShards()
    {
        if (m_index) {
            for (const auto &file : m_index->shardFiles)
                m_shards.push_back({file, {}, 0, {}, 0, false, false, 0});
            for (std::size_t s = 0; s < m_shards.size(); ++s) {
                m_shards[s].names = m_index->shardNames(s); // where they lie
                m_shards[s].firstRead = estimateHeaderBytes(m_shards[s].names);
            }
        } else {
            m_shards.push_back({"model.safetensors", {}, kDefaultFirstRead, {}, 0, false, false, 0});
        }
        if (m_probe) {
            for (auto &s : m_shards)
                if (s.file == m_guess) {
                    s.answer = std::move(*m_probe);
                    s.haveFirst = true;
                    s.held = m_probeHeld;
                    m_probeHeld = 0;
                }
        }
        m_budget.release(m_probeHeld); // a probe of a file the index does not name is dropped
        m_probe.reset();
        m_probeHeld = 0;
        m_progress.filesTotal = m_shards.size();
    }

    // Headers the cache holds for this commit; the others are returned to be fetched.
    std::vector<std::size_t> takeCached()
    {
        std::vector<std::size_t> toFetch;
        for (std::size_t i = 0; i < m_shards.size(); ++i) {
            if (m_options.cache) {
                // Read only if what is left of the budget can hold it: it is charged before it is kept.
                if (auto c = m_options.cache->shard(m_shards[i].file, m_budget.left())) {
                    m_budget.charge(m_shards[i].file, c->header.size());
                    m_shards[i].held = c->header.size();
                    m_shards[i].answer.bytes = std::move(c->header);
                    m_shards[i].answer.fileSize = c->fileSize;
                    m_shards[i].cached = true;
                    continue;
                }
            }
            toFetch.push_back(i);
        }
        return toFetch;
    }

    // One shard first, with a generous guess; what its header costs per tensor then sizes the
    // guesses for all the others, which go out together.
    void fetchShardHeaders(std::vector<std::size_t> toFetch)
    {
        if (toFetch.empty()) return;
        // The probe, when it came with the index, or else the first shard now.
        auto probed = std::find_if(toFetch.begin(), toFetch.end(),
                                   [&](std::size_t i) { return m_shards[i].haveFirst; });
        if (probed == toFetch.end()) probed = toFetch.begin();
        std::iter_swap(toFetch.begin(), probed);
        PendingShard &probe = m_shards[toFetch.front()];
        if (!probe.haveFirst)
            fetchHeaders(m_source, m_shards, {toFetch.front()}, m_budget);
        else
            settleHeader(probe, m_budget); // its whole header is charged now, before more is read
        if (m_index && !probe.names.empty()) sizeGuessesFrom(probe, toFetch);
        // The rest in one batch, with the remainder of the probe's header if it was longer. Each header
        // that comes whole is parsed on another thread at once, while the others are still coming.
        std::vector<std::size_t> rest(toFetch.begin() + 1, toFetch.end());
        const bool probeWhole = probe.answer.bytes.size() >= 8 + probe.headerLength;
        if (!probeWhole) rest.push_back(toFetch.front());
        m_ckpt.shards.resize(m_shards.size());
        m_parsed.assign(m_shards.size(), 0);
        ParseAhead ahead([this](std::size_t i) {
            parseOne(i);
            m_parsed[i] = 1;
        });
        if (probeWhole) {
            probe.handedOn = true;
            ahead.hand(toFetch.front());
        }
        fetchHeaders(m_source, m_shards, rest, m_budget, [&](std::size_t i) { ahead.hand(i); });
        ahead.finish();
    }

    void sizeGuessesFrom(const PendingShard &probe, const std::vector<std::size_t> &toFetch)
    {
        std::uint64_t nameBytes = 0;
        for (auto n : probe.names)
            nameBytes += n.size();
        const std::uint64_t total = 8 + probe.headerLength;
        // At most kMaxGuessPerTensor: a first header padded with spaces (the format allows it) must not
        // make every other shard's first read as long as it is; a header longer than its guess costs
        // one more read, never more memory.
        const double perTensor =
            std::min(kMaxGuessPerTensor, static_cast<double>(total > nameBytes ? total - nameBytes : 0) /
                                             static_cast<double>(probe.names.size()));
        for (std::size_t k = 1; k < toFetch.size(); ++k) {
            auto &s = m_shards[toFetch[k]];
            std::uint64_t names = 0;
            for (auto n : s.names)
                names += n.size();
            s.firstRead = names +
                          static_cast<std::uint64_t>(perTensor * 1.03 * static_cast<double>(s.names.size())) +
                          256;
        }
    }

    // Every header parsed on a few threads, those in `toRead` read first by the same thread; a damaged
    // cache entry is read again.
    void parseAll(const std::vector<std::size_t> &toRead)
    {
        m_ckpt.shards.resize(m_shards.size());
        std::vector<char> stale(m_shards.size(), 0), read(m_shards.size(), 0);
        for (std::size_t i : toRead)
            read[i] = 1;
        m_parsed.resize(m_shards.size(), 0);
        // Each thread reads its headers into a buffer of its own, kept from shard to shard.
        std::mutex spareLock;
        std::vector<std::string> spare;
        parallelFor(m_shards.size(), m_options.parseThreads, [&](std::size_t i) {
            if (m_parsed[i]) return; // while its batch came in
            if (read[i]) {
                std::string scratch;
                {
                    std::lock_guard hold(spareLock);
                    if (!spare.empty()) {
                        scratch = std::move(spare.back());
                        spare.pop_back();
                    }
                }
                const bool parsed = parseInPlace(i, scratch);
                std::lock_guard hold(spareLock);
                spare.push_back(std::move(scratch));
                if (parsed) return;
            }
            if (read[i]) fetchHeaders(m_source, m_shards, {i}, m_budget);
            stale[i] = !parseOne(i);
        });
        std::vector<std::size_t> refetch;
        for (std::size_t i = 0; i < m_shards.size(); ++i)
            if (stale[i]) {
                auto &s = m_shards[i];
                m_budget.release(s.held);
                s.held = 0;
                s.cached = false;
                s.haveFirst = false;
                s.firstRead = estimateHeaderBytes(s.names);
                refetch.push_back(i);
            }
        if (refetch.empty()) return;
        fetchHeaders(m_source, m_shards, refetch, m_budget);
        for (std::size_t i : refetch)
            parseOne(i);
    }

    // A shard's header read into `scratch` and parsed there, when the source reads one range at a time (a
    // local folder): its length prefix first, then the header, charged to the budget before it is read, as
    // any read is. False when the source reads only in batches.
    bool parseInPlace(std::size_t i, std::string &scratch)
    {
        stopIfCancelled(m_source.cancelFlag());
        auto &s = m_shards[i];
        std::uint64_t length = 0, size = 0;
        if (!m_source.readRangeInto({s.file, 0, 8}, scratch, [&](std::string_view first, std::uint64_t fileSize) {
                size = fileSize;
                length = parseHeaderLength(s.file, first, fileSize);
            }))
            return false;
        m_budget.charge(s.file, 8 + length);
        s.held = 8 + length;
        s.headerLength = length;
        // Room for the parser's padding after the header, spaces written there once it is read: the header is
        // then parsed where it was read, not copied again.
        const std::size_t room = static_cast<std::size_t>(8 + length) + kHeaderPadding;
        if (scratch.size() < room) assignPopulated(scratch, room);
        const bool viewed = m_source.readRangeInto({s.file, 0, 8 + length}, scratch, [&](std::string_view whole, std::uint64_t fileSize) {
            // The file changed between the two looks (another process writing it): told, never half read.
            if (fileSize != size || whole.size() != 8 + length || parseHeaderLength(s.file, whole, fileSize) != length)
                throw AtlasError(ErrorKind::Source, s.file + ": the file changed while its header was read");
            const bool inScratch = whole.data() == scratch.data() && scratch.size() >= whole.size() + kHeaderPadding;
            if (inScratch) std::memset(scratch.data() + whole.size(), ' ', kHeaderPadding);
            parseHeader(i, whole, fileSize, inScratch);
        });
        if (!viewed) {
            m_budget.release(s.held);
            s.held = 0;
            return false;
        }
        reportProgress(1);
        return true;
    }

    // False for a cached header that no longer parses (it is then fetched again).
    bool parseOne(std::size_t i)
    {
        stopIfCancelled(m_source.cancelFlag());
        auto &s = m_shards[i];
        try {
            s.headerLength = parseHeaderLength(s.file, s.answer.bytes, s.answer.fileSize);
            if (s.answer.bytes.size() < 8 + s.headerLength)
                throw AtlasError(ErrorKind::Invalid, s.file + ": header shorter than its length prefix");
            s.answer.bytes.resize(8 + s.headerLength); // a cached entry may be longer than its header
            parseHeader(i, s.answer.bytes, s.answer.fileSize);
        } catch (const AtlasError &) {
            if (!s.cached) throw;
            return false;
        }
        std::string().swap(s.answer.bytes);
        // A tail kept beyond the header (settleHeader) is gone with the bytes: the budget counts the header.
        if (const std::uint64_t header = 8 + s.headerLength; s.held > header) {
            m_budget.release(s.held - header);
            s.held = header;
        }
        reportProgress(1);
        return true;
    }

    // `whole`: the length prefix and the header, 8 + headerLength bytes.
    void parseHeader(std::size_t i, std::string_view whole, std::uint64_t fileSize, bool spacesAfter = false)
    {
        auto &s = m_shards[i];
        ListedNames *listed = nullptr;
        if (m_index) {
            s.listed.sorted = s.names;
            s.listed.owner = m_index->names;
            listed = &s.listed;
        }
        m_ckpt.shards[i] = parseShardHeader(s.file, whole.substr(8), fileSize, listed, kFastHeaderBytes, spacesAfter);
        for (auto &t : m_ckpt.shards[i].tensors)
            t.shard = static_cast<std::uint32_t>(i);
        if (m_options.cache && !s.cached) m_options.cache->storeShard(s.file, {std::string(whole), fileSize});
    }

    // Checked once here, so that every later sum of bytes or parameters fits in 64 bits.
    void checkTotals() const
    {
        std::uint64_t total = 0;
        for (const auto &s : m_ckpt.shards)
            if (__builtin_add_overflow(total, s.fileSize, &total) || total > kMaxCheckpointBytes)
                throw AtlasError(ErrorKind::Invalid, s.file + ": with this shard the checkpoint holds more than 2^59 "
                                                              "bytes; its totals would overflow, so it is refused");
    }

    // Every tensor the index names must be in the shard it names, and the other way round. The parse
    // ticked off each listed name it met and kept the others (sorted): no name is compared again here.
    void crossCheckIndex()
    {
        std::vector<std::string> unlisted;
        std::unordered_map<std::string, std::size_t> unlistedShard; // name -> the last shard it was found in
        struct Doubled
        {
            std::string name;
            std::size_t earlier, later;
        };
        std::vector<Doubled> doubled;
        std::optional<std::string> missing;
        for (std::size_t i = 0; i < m_shards.size(); ++i) {
            stopIfCancelled(m_source.cancelFlag());
            const ShardHeader &shard = m_ckpt.shards[i];
            const ListedNames &listed = m_shards[i].listed;
            for (const std::string_view name : listed.unlisted) {
                // In this header, not listed for this shard: listed elsewhere is an error.
                if (const auto other = m_index->shardOf(name))
                    throw AtlasError(ErrorKind::Invalid, "model.safetensors.index.json: tensor '" + std::string(name) +
                                                             "' is listed in " + m_index->shardFiles[*other] +
                                                             " but found in " + shard.file);
                unlisted.push_back(std::string(name) + " (in " + shard.file + ")");
                // The same unlisted name in two shards: a loader reading shard after shard keeps the
                // later copy, so the earlier one is dropped here, and said so.
                if (auto [it, fresh] = unlistedShard.try_emplace(std::string(name), i); !fresh) {
                    doubled.push_back({it->first, it->second, i});
                    it->second = i;
                }
            }
            // Told after every shard was seen: a tensor found in another shard says more.
            if (!missing) {
                const auto &names = m_shards[i].names;
                const auto absent = std::find(listed.found.begin(), listed.found.end(), 0);
                if (absent != listed.found.end())
                    missing = "model.safetensors.index.json: tensor '" +
                              std::string(names[static_cast<std::size_t>(absent - listed.found.begin())]) +
                              "' is listed in " + shard.file + ", whose header has no such tensor";
            }
        }
        if (missing) throw AtlasError(ErrorKind::Invalid, *missing);
        if (!doubled.empty()) {
            for (const auto &d : doubled) {
                auto &tensors = m_ckpt.shards[d.earlier].tensors;
                tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                             [&](const TensorInfo &t) { return t.name == d.name; }),
                              tensors.end());
            }
            const Doubled &d = doubled.front();
            m_ckpt.warnings.push_back(
                std::to_string(doubled.size()) + " tensor(s) are in two shards and in no index entry, e.g. '" + d.name +
                "' in " + m_ckpt.shards[d.earlier].file + " and " + m_ckpt.shards[d.later].file +
                ": each is counted once, from the later shard (as a loader reading shard after shard keeps it)");
        }
        if (!unlisted.empty())
            m_ckpt.warnings.push_back(std::to_string(unlisted.size()) +
                                      " tensors are in shard headers but not in the index, e.g. " +
                                      unlisted.front());
        if (m_index->totalSize && *m_index->totalSize != m_ckpt.tensorBytes())
            m_ckpt.warnings.push_back("the index says total_size " + std::to_string(*m_index->totalSize) +
                                      " but the shard headers hold " + std::to_string(m_ckpt.tensorBytes()) +
                                      " bytes");
    }

    ByteSource &m_source;
    const ReadOptions &m_options;
    HeaderBudget m_budget;
    Checkpoint m_ckpt;
    LoadProgress m_progress;
    std::mutex m_progressLock;
    std::string m_guess;                // the first shard, probed with the small files
    std::optional<RangeAnswer> m_probe; // what the probe brought
    std::uint64_t m_probeHeld = 0;      // what the budget granted it
    std::optional<CheckpointIndex> m_index;
    std::vector<PendingShard> m_shards;
    std::vector<char> m_parsed; // parsed while the batch that brought it came in
};

} // namespace

Checkpoint readCheckpoint(ByteSource &source, const ReadOptions &options)
{
    // GGUF when asked for (a .gguf path or URL, --gguf), or when the listing holds GGUF files and no
    // safetensors checkpoint (a quantisation repository).
    // A pattern alone applies to sources that hold GGUF files: `diff SAFETENSORS GGUF --gguf Q4_K_M` reads
    // the first as it is.
    const std::vector<std::string> listed = source.listFiles();
    const bool anyGguf = std::any_of(listed.begin(), listed.end(), [](const std::string &f) { return f.ends_with(".gguf"); });
    const std::string where = source.info().location;
    if (!options.gguf.file.empty() || (!options.gguf.pattern.empty() && anyGguf))
        return readGgufCheckpoint(source, chooseGgufFiles(listed, options.gguf, where), options);
    if (!options.gguf.pattern.empty() && listed.empty() && source.info().kind == SourceKind::Https)
        throw AtlasError(ErrorKind::Usage, where + ": an HTTPS directory cannot be listed, so --gguf cannot choose "
                                                   "among its files; give the URL of the .gguf file (the first of a split)");
    if (listsOnlyGguf(listed)) return readGgufCheckpoint(source, chooseGgufFiles(listed, options.gguf, where), options);
    return CheckpointRead(source, options).run();
}

} // namespace atlas
