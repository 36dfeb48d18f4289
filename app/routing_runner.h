#pragma once

#include "job_threads.h"
#include "routing.h"

#include <QObject>
#include <QString>

#include <memory>

namespace atlas {

// Runs the routing simulation off the GUI thread, like CheckpointLoader: a new request or cancel()
// stops the running one within a layer, and only the newest request's result is delivered.
class RoutingRunner final : public QObject
{
    Q_OBJECT
public:
    explicit RoutingRunner(QObject *parent = nullptr);
    void start(RoutingRequest request);
    void cancel();  // the running simulation stops; cancelled() follows
    void discard(); // a new checkpoint: whatever is running is dropped silently
    bool isRunning() const { return m_running; }
    bool idle() const { return m_jobs.idle(); } // no worker thread is left running
    // Cancels and waits until `deadline` at most; false when a worker is still running then.
    bool waitIdle(std::chrono::steady_clock::time_point deadline) { return m_jobs.waitIdle(deadline); }
    // Tokens the newest simulation has taken up (handed to the router) so far, over all its layers.
    std::uint64_t tokensRouted() const { return m_jobs.current() ? m_jobs.current()->counters[0].load() : 0; }

signals:
    void finished(std::shared_ptr<const atlas::RoutingRun> run);
    void failed(const QString &message);
    void cancelled();

private:
    JobThreads m_jobs;
    bool m_running = false;
};

} // namespace atlas

Q_DECLARE_METATYPE(std::shared_ptr<const atlas::RoutingRun>)
