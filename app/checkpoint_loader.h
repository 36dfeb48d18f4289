#pragma once

#include "atlas_view.h"
#include "job_threads.h"
#include "loaded_checkpoint.h"
#include "source_spec.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <memory>

namespace atlas {

// Loads a checkpoint off the GUI thread: layout first, then the correction biases. Results and
// progress are delivered on the loader's thread (the GUI's); cancel stops the transfers at once.
// Nothing here waits for a worker: a new start() cancels the old load, whose results are dropped.
class CheckpointLoader final : public QObject
{
    Q_OBJECT
public:
    explicit CheckpointLoader(QObject *parent = nullptr);
    ~CheckpointLoader() override;

    // An empty spec path with Kind::Local opens the embedded demo (written on first use).
    void start(const SourceSpec &spec, const NetworkOptions &options);
    void startDemo(const NetworkOptions &options = {});
    void cancel();
    // Drops the running load: nothing of it is delivered any more, not even cancelled() (a newer
    // context made it pointless: the comparison was against a checkpoint no longer shown).
    void discard();
    bool isRunning() const { return m_running; }
    bool idle() const { return m_jobs.idle(); } // no worker thread is left running
    // Cancels and waits until `deadline` at most; false when a worker is still running then.
    bool waitIdle(std::chrono::steady_clock::time_point deadline) { return m_jobs.waitIdle(deadline); }
    // Work the views do off the GUI thread once the layout is known (AtlasView::prepare); its
    // result travels with layoutReady.
    // Runs on the worker; `cancel` is the job's flag (a long preparation checks it).
    using Preparer = std::function<PreparedViews(const LoadedCheckpoint &, const std::atomic<bool> *cancel)>;
    void setPreparer(Preparer preparer) { m_preparer = std::move(preparer); }
    // Milliseconds from start() to the layout, and to the end of the load.
    qint64 layoutMs() const { return m_layoutMs; }
    qint64 totalMs() const { return m_totalMs; }

signals:
    void progress(quint64 filesDone, quint64 filesTotal, quint64 bytes, quint64 requests);
    void stage(const QString &what);
    void layoutReady(std::shared_ptr<const atlas::LoadedCheckpoint> data,
                     std::shared_ptr<const atlas::PreparedViews> prepared);
    void biasesReady(std::shared_ptr<const atlas::BiasAudit> audit);
    void finished();
    // kind: the ErrorKind (2 usage, 3 source or network, 4 invalid checkpoint).
    void failed(const QString &message, int kind);
    void cancelled();

private:
    using Job = JobThreads::Job;
    void run(SourceSpec spec, NetworkOptions options, const Preparer &preparer,
             const std::shared_ptr<Job> &job);
    template <typename Fn> void deliver(const std::shared_ptr<Job> &job, Fn fn)
    {
        m_jobs.deliver(this, job, fn);
    }

    JobThreads m_jobs;
    bool m_running = false;
    Preparer m_preparer;
    QElapsedTimer m_clock;
    qint64 m_layoutMs = -1;
    qint64 m_totalMs = -1;
    QTimer m_progressTimer;
};

} // namespace atlas

Q_DECLARE_METATYPE(std::shared_ptr<const atlas::LoadedCheckpoint>)
Q_DECLARE_METATYPE(std::shared_ptr<const atlas::BiasAudit>)
Q_DECLARE_METATYPE(std::shared_ptr<const atlas::PreparedViews>)
