#pragma once

#include <QObject>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace atlas {

// A worker gives way to the GUI thread when both want a core: this thread (and every thread it starts:
// Linux threads inherit their creator's niceness) runs at niceness 10, so the scheduler gives the GUI
// thread about nine tenths of a core they share. Idle cores still run the work at full speed.
inline void yieldToTheGuiThread()
{
#if defined(__linux__)
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, tid);
    if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(now + 10, 19));
#endif
}

// Worker threads that the GUI thread never waits for. Each job runs on a thread of its own; starting
// a job cancels the ones before it, whose late results are then dropped (the generation guard).
// Finished threads are joined when the next job starts, which costs nothing; only the destructor,
// at shutdown, waits for cancelled jobs to notice.
class JobThreads final
{
public:
    struct Job
    {
        int generation = 0;
        std::atomic<bool> cancel{false};
        std::atomic<bool> done{false};
        std::array<std::atomic<std::uint64_t>, 4> counters{}; // progress the job publishes for polling
    };

    JobThreads() = default;
    JobThreads(const JobThreads &) = delete;
    JobThreads &operator=(const JobThreads &) = delete;
    ~JobThreads()
    {
        for (auto &w : m_workers)
            w.job->cancel = true;
        for (auto &w : m_workers)
            w.thread.join();
    }

    // Runs body(job) on a new thread, after cancelling every earlier job.
    std::shared_ptr<Job> start(std::function<void(const std::shared_ptr<Job> &)> body)
    {
        reap();
        cancel();
        auto job = std::make_shared<Job>();
        job->generation = ++m_generation;
        m_current = job;
        m_workers.push_back({job, std::thread([job, body = std::move(body)] {
                                 yieldToTheGuiThread();
                                 body(job);
                                 job->done = true;
                             })});
        return job;
    }
    // Cancels every job and waits for them until `deadline` at most: true when none is left running.
    // A job stuck in a read nothing can interrupt (a hung network file system) makes it false, and
    // the program then leaves without destroying what that job still uses (gui_main).
    bool waitIdle(std::chrono::steady_clock::time_point deadline)
    {
        cancel();
        while (!idle() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return idle();
    }
    // Cancels every running job (their results will still be told apart by generation).
    void cancel()
    {
        for (auto &w : m_workers)
            w.job->cancel = true;
    }
    // Drops whatever the running jobs would still deliver.
    void forget()
    {
        cancel();
        ++m_generation;
        m_current.reset();
    }
    // On the GUI thread: is `job` the newest one, whose results may be shown?
    bool isCurrent(const Job &job) const { return job.generation == m_generation; }
    // True when every job has run its last statement: whatever they delivered is already posted.
    bool idle() const
    {
        for (const auto &w : m_workers)
            if (!w.job->done) return false;
        return true;
    }
    const Job *current() const { return m_current.get(); }

    // Posts fn to `receiver`'s thread; it runs only if `job` is still the newest job then.
    template <typename Fn> void deliver(QObject *receiver, const std::shared_ptr<Job> &job, Fn fn)
    {
        QMetaObject::invokeMethod(
            receiver,
            [this, job, fn = std::move(fn)]() mutable {
                if (isCurrent(*job)) fn();
            },
            Qt::QueuedConnection);
    }

private:
    struct Worker
    {
        std::shared_ptr<Job> job;
        std::thread thread;
    };
    void reap()
    {
        for (auto it = m_workers.begin(); it != m_workers.end();) {
            if (it->job->done) {
                it->thread.join(); // already past its last statement
                it = m_workers.erase(it);
            } else {
                ++it;
            }
        }
    }

    std::vector<Worker> m_workers;
    std::shared_ptr<Job> m_current;
    int m_generation = 0;
};

} // namespace atlas
