#pragma once

#include "loaded_checkpoint.h"
#include "source_spec.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <atomic>
#include <memory>
#include <thread>

namespace atlas {

// Loads a checkpoint off the GUI thread: layout first, then the correction biases. Results and
// progress are delivered on the loader's thread (the GUI's); cancel stops the transfers at once.
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
    bool isRunning() const { return m_running; }
    // Milliseconds from start() to the layout, and to the end of the load.
    qint64 layoutMs() const { return m_layoutMs; }
    qint64 totalMs() const { return m_totalMs; }

signals:
    void progress(quint64 filesDone, quint64 filesTotal, quint64 bytes, quint64 requests);
    void stage(const QString &what);
    void layoutReady(std::shared_ptr<const atlas::LoadedCheckpoint> data);
    void biasesReady(std::shared_ptr<const atlas::BiasAudit> audit);
    void finished();
    void failed(const QString &message);
    void cancelled();

private:
    void run(SourceSpec spec, NetworkOptions options, bool demo, int generation);
    void join();
    template <typename Fn> void deliver(int generation, Fn fn);

    std::thread m_worker;
    std::atomic<bool> m_cancel{false};
    std::atomic<int> m_generation{0};
    bool m_running = false;
    QElapsedTimer m_clock;
    qint64 m_layoutMs = -1;
    qint64 m_totalMs = -1;
    QTimer m_progressTimer;
    std::atomic<quint64> m_filesDone{0}, m_filesTotal{0}, m_bytes{0}, m_requests{0};
};

} // namespace atlas

Q_DECLARE_METATYPE(std::shared_ptr<const atlas::LoadedCheckpoint>)
Q_DECLARE_METATYPE(std::shared_ptr<const atlas::BiasAudit>)
