#include "checkpoint_index.h"

#include "errors.h"
#include "json_sax.h"
#include "populate.h"
#include "safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <future>
#include <unordered_map>

namespace atlas {

bool isSafeShardName(std::string_view name)
{
    if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
    if (name.find("..") != std::string_view::npos) return false;
    for (unsigned char c : name) {
        if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '%' || c == ':' || c == '?' || c == '#')
            return false;
    }
    return isValidUtf8(name);
}

namespace {

// How many leading bytes a and b share, eight at a time.
std::size_t commonPrefix(std::string_view a, std::string_view b)
{
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t k = 0;
    if constexpr (std::endian::native == std::endian::little)
        for (; k + 8 <= n; k += 8) {
            std::uint64_t x, y;
            std::memcpy(&x, a.data() + k, 8);
            std::memcpy(&y, b.data() + k, 8);
            if (x != y) return k + static_cast<std::size_t>(std::countr_zero(x ^ y) / 8);
        }
    while (k < n && a[k] == b[k])
        ++k;
    return k;
}

} // namespace

bool naturalLess(std::string_view a, std::string_view b)
{
    // The bytes both share compare equal, numbers and all: start where they part, or at the number they part
    // in (its digits before the parting are shared too), the same place the comparison below reaches from 0.
    std::size_t start = commonPrefix(a, b);
    while (start > 0 && a[start - 1] >= '0' && a[start - 1] <= '9')
        --start;
    std::size_t i = start, j = start;
    while (i < a.size() && j < b.size()) {
        const bool da = a[i] >= '0' && a[i] <= '9';
        const bool db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            std::size_t ei = i, ej = j;
            while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9')
                ++ei;
            while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9')
                ++ej;
            // Compare numerically without parsing: strip leading zeros, then length, then text.
            std::size_t si = i, sj = j;
            while (si + 1 < ei && a[si] == '0')
                ++si;
            while (sj + 1 < ej && b[sj] == '0')
                ++sj;
            if (ei - si != ej - sj) return ei - si < ej - sj;
            if (auto c = a.substr(si, ei - si).compare(b.substr(sj, ej - sj)); c != 0) return c < 0;
            i = ei;
            j = ej;
            continue;
        }
        if (a[i] != b[j]) return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

namespace {

// A weight_map entry as read: its name in the arena and its file.
struct Entry
{
    std::uint32_t offset = 0; // into the arena
    std::uint32_t length = 0;
    std::uint32_t shard = 0; // the file's slot
};

// Reads the index without building a DOM: eleven megabytes of weight_map for a 141-shard model.
class IndexHandler
{
public:
    using json = nlohmann::json;
    // Names go straight into `arena`, from byte `base` on, at most `capacity` bytes (no name is longer than
    // the text it was read from, so the text's length bounds them); the file names, a handful repeated
    // 118k times, are interned.
    IndexHandler(std::string_view file, const std::atomic<bool> *cancel, char *arena, std::uint64_t base,
                 std::uint64_t capacity)
        : m_file(file), m_cancel(cancel), m_arena(arena + base), m_base(base), m_capacity(capacity),
          m_arenaAhead(arena + base, capacity)
    {
    }

    std::vector<Entry> entries; // offsets into the whole arena; shard: the file's slot in files, in order
                                // of appearance
    std::vector<std::string> files;
    std::optional<std::uint64_t> totalSize;
    bool sawWeightMap = false;
    bool sawMetadata = false;
    int repeatedWeightMaps = 0;
    // Every name greater than the one before it, as the writers list them (transformers' save_pretrained,
    // json.dump(sort_keys=True)): told as the entries are read, while the last name is still in cache.
    bool increasing = true;

    // For the second half of a document: the reading starts inside weight_map, a key next.
    void resumeInWeightMap()
    {
        m_started = true;
        m_depth = 2;
        m_inWeightMap = true;
        sawWeightMap = true;
    }
    bool inWeightMap() const { return m_depth == 2 && m_inWeightMap; }
    // Appends what `later` read after the point where this reading stopped (a key of weight_map): the result
    // is what one reading of the whole text gives.
    void append(IndexHandler &&later)
    {
        if (later.repeatedWeightMaps) {
            // A weight_map given again in the later half: the last one counts, and only the later half has it.
            repeatedWeightMaps += later.repeatedWeightMaps;
            increasing = later.increasing;
            entries = std::move(later.entries);
            files = std::move(later.files);
        } else {
            // The later half's names are in its own part of the arena already, its entries' offsets too.
            std::vector<std::uint32_t> slot(later.files.size());
            for (std::size_t f = 0; f < later.files.size(); ++f) {
                auto [it, fresh] = m_fileSlot.try_emplace(later.files[f], static_cast<std::uint32_t>(files.size()));
                if (fresh) files.push_back(later.files[f]);
                slot[f] = it->second;
            }
            if (!later.entries.empty())
                increasing = increasing && later.increasing &&
                             (entries.empty() || nameAt(entries.back()) < later.nameAt(later.entries.front()));
            entries.reserve(entries.size() + later.entries.size());
            populateForWrite(entries.data() + entries.size(), later.entries.size() * sizeof(Entry));
            for (auto e : later.entries) {
                e.shard = slot[e.shard];
                entries.push_back(e);
            }
        }
        if (later.sawMetadata) totalSize = later.totalSize;
        sawMetadata = sawMetadata || later.sawMetadata;
    }

    bool null() { return value("null"); }
    bool boolean(bool) { return value("a boolean"); }
    bool number_integer(json::number_integer_t v)
    {
        if (m_depth == 2 && m_inMetadata && m_key == "total_size" && v >= 0)
            totalSize = static_cast<std::uint64_t>(v);
        return value("a number");
    }
    bool number_unsigned(json::number_unsigned_t v)
    {
        if (m_depth == 2 && m_inMetadata && m_key == "total_size") totalSize = v;
        return value("a number");
    }
    bool number_float(json::number_float_t v, const std::string &)
    {
        // Some writers store total_size as a float; take it when it is a whole number.
        if (m_depth == 2 && m_inMetadata && m_key == "total_size" && v >= 0 && v < 1.8e19 &&
            v == static_cast<double>(static_cast<std::uint64_t>(v)))
            totalSize = static_cast<std::uint64_t>(v);
        return value("a number");
    }
    bool binary(json::binary_t &) { return value("binary data"); }
    // A tensor's file, read where it lies in the text (json_sax.h): compared with the last entry's first.
    bool string_in_place(std::string_view v)
    {
        if (m_depth == 2 && m_inWeightMap) {
            // The key was written into the arena when it was read (key): kept now.
            Entry e;
            e.offset = static_cast<std::uint32_t>(m_base + m_used);
            e.length = static_cast<std::uint32_t>(m_keyLength);
            if (m_lastFile >= 0 && files[static_cast<std::size_t>(m_lastFile)] == v) {
                e.shard = static_cast<std::uint32_t>(m_lastFile);
            } else {
                auto [it, fresh] = m_fileSlot.try_emplace(std::string(v), static_cast<std::uint32_t>(files.size()));
                if (fresh) {
                    if (!isSafeShardName(v))
                        fail(HeaderProblem::UnsafeFileName, "weight_map entry for '" + keyText() + "' names '" +
                                                                std::string(v) +
                                                                "', which is not a plain file name in the same "
                                                                "directory");
                    files.push_back(std::string(v));
                }
                e.shard = it->second;
                m_lastFile = static_cast<int>(it->second);
            }
            if (!entries.empty() && increasing) increasing = nameAt(entries.back()) < nameAt(e);
            if (entries.data() != m_entriesBase) { // reserved up front: this happens once
                m_entriesBase = entries.data();
                m_entriesAhead = PopulateAhead(entries.data(), entries.capacity() * sizeof(Entry));
            }
            m_entriesAhead.need((entries.size() + 1) * sizeof(Entry));
            entries.push_back(e);
            m_used += m_keyLength; // kept (only now: a fault above names the key as it stands at m_used)
            if ((entries.size() & 4095) == 0) stopIfCancelled(m_cancel);
            return true;
        }
        return value("a string");
    }
    bool start_object(std::size_t)
    {
        if (m_depth == 0 && m_started) fail(HeaderProblem::BadIndex, "not a JSON object");
        m_started = true;
        if (m_depth == 1) {
            m_inWeightMap = m_key == "weight_map";
            m_inMetadata = m_key == "metadata";
            // A key given twice: the last one counts, as Python's json (and so transformers) reads it.
            if (m_inWeightMap && sawWeightMap) {
                ++repeatedWeightMaps;
                m_used = 0;
                increasing = true;
                entries.clear();
                files.clear();
                m_fileSlot.clear();
                m_lastFile = -1;
            }
            if (m_inMetadata) totalSize.reset();
            sawMetadata = sawMetadata || m_inMetadata;
            sawWeightMap = sawWeightMap || m_inWeightMap;
        } else if (m_depth == 2 && m_inWeightMap) {
            fail(HeaderProblem::BadIndex, "weight_map entry for '" + keyText() + "' is not a file name");
        }
        ++m_depth;
        return true;
    }
    // A key, read where it lies in the text (json_sax.h): a tensor name is copied once, into the arena.
    bool key_in_place(std::string_view k)
    {
        if (m_depth == 2 && m_inWeightMap) { // a tensor name: into the arena at once, kept if a file follows
            if (k.size() > m_capacity - m_used || m_base + m_used + k.size() > UINT32_MAX)
                fail(HeaderProblem::BadIndex, "the tensor names of weight_map exceed 4 GiB");
            m_arenaAhead.need(m_used + k.size());
            std::memcpy(m_arena + m_used, k.data(), k.size());
            m_keyLength = k.size();
            return true;
        }
        m_key.assign(k); // a copy: the parser's buffer keeps its capacity (no allocation per name)
        return true;
    }
    bool end_object()
    {
        if (--m_depth == 1) m_inWeightMap = m_inMetadata = false;
        return true;
    }
    bool start_array(std::size_t)
    {
        if (m_depth == 0) fail(HeaderProblem::BadIndex, "not a JSON object");
        if (m_depth == 1 && m_key == "weight_map")
            fail(HeaderProblem::BadIndex, "weight_map is not an object");
        value("an array");
        ++m_depth;
        return true;
    }
    bool end_array()
    {
        --m_depth;
        return true;
    }
    bool parse_error(std::size_t position, const std::string &what)
    {
        fail(HeaderProblem::BadIndex, "not valid JSON (byte " + std::to_string(position) + "): " + what);
    }

private:
    bool value(const char *what)
    {
        if (m_depth == 0) fail(HeaderProblem::BadIndex, "not a JSON object");
        if (m_depth == 2 && m_inWeightMap)
            fail(HeaderProblem::BadIndex,
                 "weight_map entry for '" + keyText() + "' is " + what + ", not a file name");
        if (m_depth == 1 && m_key == "weight_map")
            fail(HeaderProblem::BadIndex, "weight_map is not an object");
        return true;
    }
    [[noreturn]] void fail(HeaderProblem p, const std::string &what)
    {
        throw AtlasError(ErrorKind::Invalid, std::string(m_file) + ": " + what, p);
    }

    // An entry's name, read or being read by this reading (in its part of the arena).
    std::string_view nameAt(const Entry &e) const
    {
        return std::string_view(m_arena + (e.offset - m_base), e.length);
    }
    // The tensor name just read inside weight_map (asked only there, at depth 2): in the arena at m_used,
    // not yet kept.
    std::string keyText() const { return std::string(m_arena + m_used, m_keyLength); }

    std::string_view m_file;
    const std::atomic<bool> *m_cancel = nullptr;
    char *m_arena;                 // this reading's part of the arena
    std::uint64_t m_base;          // where that part starts in the whole arena
    std::uint64_t m_capacity;      // its length
    std::uint64_t m_used = 0;      // names kept in it
    std::size_t m_keyLength = 0;   // the tensor name written at m_used by key()
    PopulateAhead m_arenaAhead;    // the arena's pages, a chunk ahead of the names written
    const Entry *m_entriesBase = nullptr;
    PopulateAhead m_entriesAhead;  // the entries' likewise
    int m_depth = 0;
    bool m_started = false;
    bool m_inWeightMap = false;
    bool m_inMetadata = false;
    std::string m_key;
    int m_lastFile = -1;
    std::unordered_map<std::string, std::uint32_t> m_fileSlot;
};


// Where an entry of weight_map may begin at or after `from`: the quote of a key after `", "` (the quote
// before the comma not escaped), or npos within `window` bytes. Only a guess: the reading of the first half
// says whether a key of weight_map begins there.
std::size_t entryStartAfter(std::string_view t, std::size_t from, std::size_t window)
{
    auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
    for (std::size_t i = from; i < t.size() && i < from + window; ++i) {
        if (t[i] != ',') continue;
        std::size_t j = i;
        while (j > 0 && space(t[j - 1]))
            --j;
        if (j == 0 || t[j - 1] != '"') continue;
        std::size_t slashes = 0;
        for (std::size_t k = j - 1; k > 0 && t[k - 1] == '\\'; --k)
            ++slashes;
        if (slashes % 2) continue;
        std::size_t k = i + 1;
        while (k < t.size() && space(t[k]))
            ++k;
        if (k < t.size() && t[k] == '"') return k;
    }
    return std::string_view::npos;
}

} // namespace

CheckpointIndex parseCheckpointIndex(std::string_view file, std::string_view text, const std::atomic<bool> *cancel,
                                     std::size_t splitFrom)
{
    auto fail = [&](HeaderProblem p, const std::string &what) {
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": " + what, p);
    };
    // A large index is read in two halves at once: the second from a guessed key of weight_map near the
    // middle, the first up to that key. When the first reading does stop there (inside weight_map, a key
    // next), the two readings joined are the one reading; otherwise the first simply reads on to the end.
    // Either way the first half's fault is the one told, as a single reading would meet it first.
    // (Not beyond 2 GiB of text: the later half's names are placed after the whole text's length, and their
    // offsets must stay 32-bit.)
    const std::size_t split = text.size() >= splitFrom && text.size() <= (UINT32_MAX >> 1)
                                  ? entryStartAfter(text, text.size() / 2, 1u << 16)
                                  : std::string_view::npos;
    // The names are no more bytes than the text they are read from: one arena, allocated once and never
    // copied, the first reading's part as long as the whole text (it may read on to the end), the second's
    // after it. Pages never written are never resident; the second half's names are not copied after the
    // first's (18 MB for Kimi-K3).
    auto arena = std::make_shared<CheckpointIndex::NameArena>();
    arena->size = text.size() + (split == std::string_view::npos ? 0 : text.size() - split);
    arena->bytes = std::make_unique_for_overwrite<char[]>(std::max<std::size_t>(arena->size, 1));
    IndexHandler handler(file, cancel, arena->bytes.get(), 0, text.size());
    // The entries likewise: at least 16 bytes of text each in any real index (a name, a file, four quotes,
    // a colon and a comma), so these pages are the ones written and the vector is not copied as it grows.
    handler.entries.reserve(text.size() / 16);
    if (split == std::string_view::npos) {
        if (!parseJson(text, handler)) fail(HeaderProblem::BadIndex, "not valid JSON");
    } else {
        JsonPart later{split, 2};
        IndexHandler second(file, cancel, arena->bytes.get(), text.size(), text.size() - split);
        second.resumeInWeightMap();
        auto reading = std::async(std::launch::async, [&] {
            second.entries.reserve((text.size() - split) / 16);
            if (!parseJson(text, second, &later)) fail(HeaderProblem::BadIndex, "not valid JSON");
        });
        JsonPart first;
        first.stopAt = split;
        first.stopObjects = 2;
        bool ok = false;
        try {
            ok = parseJson(text, handler, &first);
        } catch (...) {
            reading.wait();
            throw;
        }
        if (!ok) {
            reading.wait();
            fail(HeaderProblem::BadIndex, "not valid JSON");
        }
        if (first.stopped && handler.inWeightMap()) {
            reading.get(); // the later half's fault, if any, is the document's
            handler.append(std::move(second));
        } else {
            reading.wait();
            if (first.stopped) { // a key at that byte, but not one of weight_map: read on from there
                JsonPart rest{split, 2};
                if (!parseJson(text, handler, &rest)) fail(HeaderProblem::BadIndex, "not valid JSON");
            }
        }
    }
    if (!handler.sawWeightMap) fail(HeaderProblem::BadIndex, "no weight_map object");
    if (handler.entries.empty()) fail(HeaderProblem::BadIndex, "weight_map is empty");

    CheckpointIndex index;
    if (handler.repeatedWeightMaps)
        index.warnings.push_back(std::string(file) + ": the key weight_map appears " +
                                 std::to_string(handler.repeatedWeightMaps + 1) +
                                 " times; the last one is used, as Python's json reads it");
    index.totalSize = handler.totalSize;
    index.names = std::move(arena);
    // Natural order of the shard files, and the entries renumbered to it.
    std::vector<std::uint32_t> order(handler.files.size());
    for (std::uint32_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return naturalLess(handler.files[a], handler.files[b]);
    });
    std::vector<std::uint32_t> renumber(order.size());
    index.shardFiles.resize(order.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) {
        renumber[order[k]] = k;
        index.shardFiles[k] = std::move(handler.files[order[k]]);
    }
    std::vector<Entry> &entries = handler.entries;
    for (auto &e : entries)
        e.shard = renumber[e.shard];
    const char *const chars = index.names->bytes.get();
    const auto nameOf = [chars](const Entry &e) { return std::string_view(chars + e.offset, e.length); };
    index.shardStart.assign(index.shardFiles.size() + 1, 0);
    for (const auto &e : entries)
        ++index.shardStart[e.shard + 1];
    for (std::size_t s = 1; s < index.shardStart.size(); ++s)
        index.shardStart[s] += index.shardStart[s - 1];
    assignPopulated(index.listed, entries.size());
    assignPopulated(index.byName, entries.size());
    // Names in increasing order (the writers' order, told by the reading) are unique, and a stable pass by
    // shard keeps each shard's names in order: the by-name order is the file's, with no sort of 497k names
    // (Kimi-K3). Any other order is sorted, and then checked for a name given twice.
    if (handler.increasing) {
        std::vector<std::size_t> next(index.shardStart.begin(), index.shardStart.end() - 1);
        for (std::uint32_t i = 0; i < entries.size(); ++i) {
            const std::size_t at = next[entries[i].shard]++;
            index.listed[at] = nameOf(entries[i]);
            index.byName[i] = static_cast<std::uint32_t>(at);
        }
    } else {
        std::sort(entries.begin(), entries.end(), [&](const Entry &a, const Entry &b) {
            return a.shard != b.shard ? a.shard < b.shard : nameOf(a) < nameOf(b);
        });
        for (std::uint32_t i = 0; i < entries.size(); ++i) {
            index.listed[i] = nameOf(entries[i]);
            index.byName[i] = i;
        }
        std::sort(index.byName.begin(), index.byName.end(),
                  [&](std::uint32_t a, std::uint32_t b) { return index.listed[a] < index.listed[b]; });
        for (std::size_t i = 1; i < index.byName.size(); ++i)
            if (index.listed[index.byName[i]] == index.listed[index.byName[i - 1]])
                fail(HeaderProblem::BadIndex,
                     "weight_map lists tensor '" + std::string(index.listed[index.byName[i]]) + "' twice");
    }
    return index;
}

std::optional<std::uint32_t> CheckpointIndex::shardOf(std::string_view tensor) const
{
    const auto it = std::lower_bound(byName.begin(), byName.end(), tensor,
                                     [&](std::uint32_t i, std::string_view t) { return listed[i] < t; });
    if (it == byName.end() || listed[*it] != tensor) return std::nullopt;
    // The shard whose range holds that position.
    const auto after = std::upper_bound(shardStart.begin(), shardStart.end(), static_cast<std::size_t>(*it));
    return static_cast<std::uint32_t>(after - shardStart.begin() - 1);
}

} // namespace atlas
