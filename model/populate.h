#pragma once

#include <cstddef>

namespace atlas {

// Backs the whole pages inside [data, data + bytes) with memory now, in one call to the kernel
// (MADV_POPULATE_WRITE, Linux 5.14 and later), instead of one page fault each as they are first written.
// On the virtual machines CI runs on a fresh page cost 10-11 us touched and 5.5 us populated, and an open
// of Kimi-K3's layout is mostly the first writes to its ~120 MB. Where the kernel cannot, nothing happens
// and the pages come as they are written. Only for memory about to be written in full: populated pages
// are resident whether or not they are used.
void populateForWrite(void *data, std::size_t bytes);

// `c` (a vector or a string) made n copies of `value`, its pages populated first rather than faulted in one at
// a time as they are filled.
template <typename Container>
void assignPopulated(Container &c, std::size_t n, const typename Container::value_type &value = {})
{
    c.clear();
    c.reserve(n);
    populateForWrite(c.data(), n * sizeof(typename Container::value_type));
    c.assign(n, value);
}

// A buffer written front to back, populated a chunk (1 MiB) ahead of the writing: call need(end) before
// writing up to byte `end`.
class PopulateAhead
{
public:
    PopulateAhead() = default;
    PopulateAhead(void *base, std::size_t capacity) : m_base(static_cast<char *>(base)), m_capacity(capacity) {}
    void need(std::size_t end)
    {
        if (end > m_done) advance(end);
    }

private:
    void advance(std::size_t end);
    char *m_base = nullptr;
    std::size_t m_capacity = 0;
    std::size_t m_done = 0;
};

} // namespace atlas
