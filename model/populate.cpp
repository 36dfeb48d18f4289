#include "populate.h"

#include <algorithm>
#include <cstdint>

#include <sys/mman.h>

namespace atlas {

void populateForWrite(void *data, std::size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    constexpr std::uintptr_t kPage = 4096;
    const auto at = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t from = (at + kPage - 1) & ~(kPage - 1), to = (at + bytes) & ~(kPage - 1);
    if (to > from) (void)::madvise(reinterpret_cast<void *>(from), to - from, MADV_POPULATE_WRITE);
#else
    (void)data;
    (void)bytes;
#endif
}

void PopulateAhead::advance(std::size_t end)
{
    constexpr std::size_t kChunk = std::size_t(1) << 20;
    const std::size_t until = std::min(m_capacity, std::max(end, m_done + kChunk));
    if (until > m_done) populateForWrite(m_base + m_done, until - m_done);
    m_done = until;
}

} // namespace atlas
