#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string_view>
#include <vector>

namespace atlas {

// A map from names (views whose characters outlive the map: a checkpoint's name arenas) to small
// values, in one flat table: open addressing, linear probing, a 32-bit hash tag beside each key so that
// a probe rarely compares characters. The analysis asks one per tensor (a module's block scales, a name's
// role); std::unordered_map allocated a node per entry and missed the cache on each look-up: with a
// million FP8 scales that was most of the analysis.
template <typename V> class NameMap
{
public:
    // The value for `key`, inserted as V{} when absent; `fresh` says which.
    V &tryEmplace(std::string_view key, bool &fresh)
    {
        if ((m_size + 1) * 10 > m_slots.size() * 7) grow();
        const std::uint64_t h = hashOf(key);
        for (std::size_t i = h & m_mask;; i = (i + 1) & m_mask) {
            Slot &s = m_slots[i];
            if (!s.used) {
                s = {key.data(), static_cast<std::uint32_t>(key.size()), tagOf(h), static_cast<std::uint32_t>(h), true, V{}};
                ++m_size;
                fresh = true;
                return s.value;
            }
            if (s.tag == tagOf(h) && keyOf(s) == key) {
                fresh = false;
                return s.value;
            }
        }
    }
    // Inserts unless present (the first value stays, as emplace keeps it).
    void insert(std::string_view key, const V &value)
    {
        bool fresh = false;
        V &v = tryEmplace(key, fresh);
        if (fresh) v = value;
    }
    const V *find(std::string_view key) const
    {
        if (m_size == 0) return nullptr;
        const std::uint64_t h = hashOf(key);
        for (std::size_t i = h & m_mask;; i = (i + 1) & m_mask) {
            const Slot &s = m_slots[i];
            if (!s.used) return nullptr;
            if (s.tag == tagOf(h) && keyOf(s) == key) return &s.value;
        }
    }
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    // The longest run of slots a look-up walks (for tests: crafted names must not make it long).
    std::size_t longestRun() const
    {
        std::size_t longest = 0, run = 0;
        for (std::size_t i = 0; i < 2 * m_slots.size(); ++i) {
            run = m_slots[i & m_mask].used ? run + 1 : 0;
            longest = std::max(longest, run);
        }
        return std::min(longest, m_slots.size());
    }
    std::size_t size() const { return m_size; }

private:
    struct Slot
    {
        const char *data = nullptr;
        std::uint32_t length = 0; // names longer than 4 GiB do not occur: the index refuses them
        std::uint32_t tag = 0;
        // The hash's slot half, kept: growing moves slots without hashing their names again (h & m_mask is
        // home & m_mask while the table holds fewer than 2^32 slots, 128 GiB of them).
        std::uint32_t home = 0;
        bool used = false;
        V value{};
    };
    // The slot comes from the high bits of the hash times an odd number drawn once per process: names a
    // header crafts to share their low hash bits (cheap to find for an unseeded hash, and linear probing
    // would then walk one long run for every look-up) land apart. std::unordered_map's prime modulus had
    // the same protection by accident.
    static std::uint64_t hashOf(std::string_view key)
    {
        static const std::uint64_t multiplier = [] {
            std::random_device device;
            return ((std::uint64_t(device()) << 32) ^ std::uint64_t(device()) ^ 0x9E3779B97F4A7C15ULL) | 1u;
        }();
        const std::uint64_t h = std::hash<std::string_view>{}(key) * multiplier;
        return (h >> 32) | (h << 32); // the well-mixed high half indexes the slots
    }
    static std::uint32_t tagOf(std::uint64_t h) { return static_cast<std::uint32_t>(h >> 32); }
    static std::string_view keyOf(const Slot &s) { return {s.data, s.length}; }
    void grow()
    {
        std::vector<Slot> old;
        old.swap(m_slots);
        m_slots.resize(old.empty() ? 64 : old.size() * 2);
        m_mask = m_slots.size() - 1;
        for (const Slot &s : old)
            if (s.used)
                for (std::size_t i = s.home & m_mask;; i = (i + 1) & m_mask)
                    if (!m_slots[i].used) {
                        m_slots[i] = s;
                        break;
                    }
    }

    std::vector<Slot> m_slots;
    std::size_t m_mask = 0;
    std::size_t m_size = 0;
};

} // namespace atlas
