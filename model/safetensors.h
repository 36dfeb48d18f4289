#pragma once

#include "dtype.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// The largest header the reference implementation accepts.
inline constexpr std::uint64_t kMaxHeaderLength = 100'000'000;
// No file a source reports may be larger: 1 PiB is over a thousand times the largest checkpoint
// shard seen, and keeps every sum of offsets and sizes far from 64-bit overflow.
inline constexpr std::uint64_t kMaxFileSize = 1ull << 50;
// All shards of one checkpoint together: with at most 8 logical elements per stored byte (1-bit
// packing), every byte and parameter total then stays below 2^63.
inline constexpr std::uint64_t kMaxCheckpointBytes = 1ull << 59;

// Names of one shard's tensors, each stored once in blocks that never move, so that a view into
// them stays valid while the arena lives (a 497k-tensor checkpoint holds 37 MB of names: one heap
// string each cost as much again in allocator overhead and page faults).
class NameArena
{
public:
    std::string_view add(std::string_view name);

private:
    std::vector<std::unique_ptr<char[]>> m_blocks;
    char *m_next = nullptr;
    std::size_t m_left = 0;
};

// A tensor's dimensions, held in place up to rank 4 (every tensor of a language model's checkpoint; a
// vision tower's Conv3d has rank 5 and is held on the heap): a 497k-tensor checkpoint's shapes were half a
// million small allocations, 16 MB with the allocator's overhead.
class Shape
{
public:
    using value_type = std::uint64_t;
    static constexpr std::uint32_t kInPlace = 4;

    Shape() = default;
    Shape(std::initializer_list<std::uint64_t> dims) { assign(dims.begin(), dims.end()); }
    Shape(const std::vector<std::uint64_t> &dims) { assign(dims.begin(), dims.end()); }
    Shape(const Shape &other) { assign(other.begin(), other.end()); }
    Shape(Shape &&other) noexcept { take(other); }
    Shape &operator=(const Shape &other)
    {
        if (this != &other) assign(other.begin(), other.end());
        return *this;
    }
    Shape &operator=(Shape &&other) noexcept
    {
        if (this != &other) {
            release();
            take(other);
        }
        return *this;
    }
    ~Shape() { release(); }

    template <typename It> void assign(It first, It last)
    {
        clear();
        reserve(static_cast<std::size_t>(std::distance(first, last)));
        for (; first != last; ++first)
            push_back(static_cast<std::uint64_t>(*first));
    }
    void push_back(std::uint64_t d)
    {
        if (m_size == m_capacity) reserve(std::size_t(m_capacity) * 2);
        data()[m_size++] = d;
    }
    // Room for n dimensions, allocated once (a shape of rank 9 copied is one allocation, not two).
    void reserve(std::size_t n)
    {
        if (n <= m_capacity) return;
        if (n > (UINT32_MAX >> 1)) throw std::length_error("a tensor shape of more than 2^31 dimensions");
        auto *bigger = new std::uint64_t[n];
        std::copy(begin(), end(), bigger);
        const std::uint32_t size = m_size;
        release();
        m_heap = bigger;
        m_capacity = static_cast<std::uint32_t>(n);
        m_size = size;
    }
    void clear() { m_size = 0; }

    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    std::uint64_t *data() { return m_capacity > kInPlace ? m_heap : m_inPlace; }
    const std::uint64_t *data() const { return m_capacity > kInPlace ? m_heap : m_inPlace; }
    std::uint64_t &operator[](std::size_t i) { return data()[i]; }
    std::uint64_t operator[](std::size_t i) const { return data()[i]; }
    std::uint64_t front() const { return data()[0]; }
    std::uint64_t back() const { return data()[m_size - 1]; }
    const std::uint64_t *begin() const { return data(); }
    const std::uint64_t *end() const { return data() + m_size; }
    std::reverse_iterator<const std::uint64_t *> rbegin() const { return std::reverse_iterator(end()); }
    std::reverse_iterator<const std::uint64_t *> rend() const { return std::reverse_iterator(begin()); }

    operator std::span<const std::uint64_t>() const { return {data(), m_size}; }
    std::vector<std::uint64_t> toVector() const { return {begin(), end()}; }
    friend bool operator==(const Shape &a, const Shape &b)
    {
        return a.m_size == b.m_size && std::equal(a.begin(), a.end(), b.begin());
    }

private:
    void release()
    {
        if (m_capacity > kInPlace) delete[] m_heap;
        m_capacity = kInPlace;
    }
    void take(Shape &other)
    {
        m_size = other.m_size;
        m_capacity = other.m_capacity;
        if (m_capacity > kInPlace)
            m_heap = other.m_heap;
        else
            std::copy(other.m_inPlace, other.m_inPlace + m_size, m_inPlace);
        other.m_size = 0;
        other.m_capacity = kInPlace;
    }

    union {
        std::uint64_t m_inPlace[kInPlace];
        std::uint64_t *m_heap;
    };
    std::uint32_t m_size = 0;
    std::uint32_t m_capacity = kInPlace;
};

struct TensorInfo
{
    std::string_view name; // into a store its ShardHeader keeps alive (ShardHeader::keepName)
    Shape shape;
    std::uint64_t begin = 0; // relative to the end of the header
    std::uint64_t end = 0;
    std::uint64_t numel = 0;
    std::uint32_t shard = 0; // index into Checkpoint::shards
    Dtype dtype = Dtype::F32;

    std::uint64_t bytes() const { return end - begin; }
};

struct ShardHeader
{
    std::string file;
    std::uint64_t headerLength = 0; // N
    std::uint64_t fileSize = 0;
    std::vector<TensorInfo> tensors; // in data order
    std::map<std::string, std::string> metadata;
    // What the tensors' names point into: this shard's own arena and/or the index's names (shared
    // by copies of the header, so a copy's names stay valid).
    std::vector<std::shared_ptr<const void>> nameStores;

    std::uint64_t dataStart() const { return 8 + headerLength; }
    // A lasting copy of `name`, kept by this header (for tensors built by hand: tests, tools).
    std::string_view keepName(std::string_view name);

private:
    std::shared_ptr<NameArena> m_ownNames;
};

// The names the index lists for one shard, sorted: the header's names are taken from them (one copy
// of each name in memory), and what the header adds or lacks is told back, so that the index is
// checked against the header without sorting or comparing the names again.
struct ListedNames
{
    std::span<const std::string_view> sorted;
    std::shared_ptr<const void> owner; // keeps `sorted`'s characters alive
    // Filled by parseShardHeader:
    std::vector<char> found;                // per listed name: in the header
    std::vector<std::string_view> unlisted; // names of the header the list lacks, sorted
};

// Reads N from the first 8 bytes and checks it against the limit and the file size.
std::uint64_t parseHeaderLength(std::string_view file, std::string_view first8, std::uint64_t fileSize);

// Parses and validates the JSON header (exactly N bytes) of a file of fileSize bytes.
// Throws AtlasError(Invalid) naming the file, the tensor and the rule broken.
// With `listed`, names are matched against the index's list for this shard as they are read.
// A header of up to `fastUpTo` bytes that is plain ASCII with no escapes and no minus sign (as real ones
// are) is tokenised by simdjson, any other by the project's own reader; the answer, or the error, is the
// same either way (tst_safetensors headerReadEitherWay, fuzz_headers). 0: always the project's reader.
// 2 MiB bounds what each reading thread keeps for simdjson; Kimi-K3's shard headers are 0.8 MB.
constexpr std::size_t kFastHeaderBytes = 2u << 20;
// With `spacesAfter`, the caller says the kHeaderPadding bytes after the header's last are its own and spaces:
// simdjson then reads the header where it lies, instead of a padded copy.
constexpr std::size_t kHeaderPadding = 64;
ShardHeader parseShardHeader(std::string_view file, std::string_view json, std::uint64_t fileSize,
                             ListedNames *listed = nullptr, std::size_t fastUpTo = kFastHeaderBytes,
                             bool spacesAfter = false);

// numel x bits / 8, or throws on overflow / sub-byte misalignment.
std::uint64_t tensorByteSize(std::string_view file, std::string_view tensor, Dtype dtype,
                             std::span<const std::uint64_t> shape, std::uint64_t *numelOut = nullptr);

bool isValidUtf8(std::string_view text);

} // namespace atlas
