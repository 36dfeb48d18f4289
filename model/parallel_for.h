#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace atlas {

// What a thread count of 0 ("one per core") comes to on this machine.
inline unsigned resolvedThreads(unsigned threads)
{
    return threads ? threads : std::max(1u, std::thread::hardware_concurrency());
}

// Runs fn(i) for every i in [0, n) on up to `threads` threads (0: one per core), the calling
// thread among them. The first exception stops the handing out of work and is rethrown.
template <typename Fn> void parallelFor(std::size_t n, unsigned threads, Fn fn)
{
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(n, 1))));
    std::atomic<std::size_t> next{0};
    std::exception_ptr error;
    std::mutex errorLock;
    auto worker = [&] {
        for (;;) {
            const std::size_t i = next.fetch_add(1);
            if (i >= n) return;
            try {
                fn(i);
            } catch (...) {
                std::lock_guard lock(errorLock);
                if (!error) error = std::current_exception();
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
    if (error) std::rethrow_exception(error);
}

} // namespace atlas
