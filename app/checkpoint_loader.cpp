#include "checkpoint_loader.h"

#include "bias_reader.h"
#include "checkpoint_reader.h"
#include "demo.h"
#include "errors.h"

#include <QMetaObject>

namespace atlas {

CheckpointLoader::CheckpointLoader(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const LoadedCheckpoint>>();
    qRegisterMetaType<std::shared_ptr<const BiasAudit>>();
    // Progress is polled, so the worker never floods the event loop: ten updates a second at most.
    m_progressTimer.setInterval(100);
    connect(&m_progressTimer, &QTimer::timeout, this,
            [this] { emit progress(m_filesDone, m_filesTotal, m_bytes, m_requests); });
}

CheckpointLoader::~CheckpointLoader()
{
    m_cancel = true;
    join();
}

void CheckpointLoader::join()
{
    if (m_worker.joinable()) m_worker.join();
}

void CheckpointLoader::cancel()
{
    if (m_running) m_cancel = true;
}

template <typename Fn> void CheckpointLoader::deliver(int generation, Fn fn)
{
    QMetaObject::invokeMethod(
        this,
        [this, generation, fn = std::move(fn)]() mutable {
            if (generation == m_generation) fn();
        },
        Qt::QueuedConnection);
}

void CheckpointLoader::startDemo(const NetworkOptions &options)
{
    start(SourceSpec{}, options);
}

void CheckpointLoader::start(const SourceSpec &spec, const NetworkOptions &options)
{
    m_cancel = true;
    join();
    m_cancel = false;
    const int generation = ++m_generation;
    m_filesDone = m_filesTotal = m_bytes = m_requests = 0;
    m_running = true;
    m_clock.start();
    m_layoutMs = m_totalMs = -1;
    m_progressTimer.start();
    const bool demo = spec.kind == SourceSpec::Kind::Local && spec.path.empty();
    m_worker = std::thread([this, spec, options, demo, generation] { run(spec, options, demo, generation); });
}

void CheckpointLoader::run(SourceSpec spec, NetworkOptions options, bool demo, int generation)
{
    auto finish = [this, generation](auto signal) {
        deliver(generation, [this, signal] {
            m_running = false;
            m_totalMs = m_clock.elapsed();
            m_progressTimer.stop();
            emit progress(m_filesDone, m_filesTotal, m_bytes, m_requests);
            signal();
        });
    };
    try {
        if (demo) {
            deliver(generation, [this] { emit stage(tr("Preparing the synthetic demo checkpoint…")); });
            spec.path = ensureDemoCheckpoint().string();
        }
        deliver(generation, [this] { emit stage(tr("Reading headers…")); });
        OpenedSource opened = openSource(spec, options, &m_cancel);
        ReadOptions read;
        read.cache = opened.cache.get();
        read.progress = [this](const LoadProgress &p) {
            m_filesDone = p.filesDone;
            m_filesTotal = p.filesTotal;
            m_bytes = p.bytes;
            m_requests = p.requests;
        };
        auto loaded = std::make_shared<LoadedCheckpoint>();
        loaded->checkpoint = readCheckpoint(*opened.source, read);
        loaded->analysis = analyze(loaded->checkpoint);
        std::shared_ptr<const LoadedCheckpoint> layout = loaded;
        deliver(generation, [this, layout] {
            m_layoutMs = m_clock.elapsed();
            emit layoutReady(layout);
        });

        deliver(generation, [this] { emit stage(tr("Reading the router correction biases…")); });
        const BiasFetchPlan plan = planBiasFetch(layout->checkpoint);
        auto audit = std::make_shared<BiasAudit>(
            auditBiases(layout->checkpoint.config, readBiases(*opened.source, plan), plan.bytes));
        m_bytes = opened.source->bytesReceived();
        m_requests = opened.source->requestsMade();
        std::shared_ptr<const BiasAudit> biases = audit;
        deliver(generation, [this, biases] { emit biasesReady(biases); });
        finish([this] { emit finished(); });
    } catch (const AtlasError &e) {
        if (m_cancel) {
            finish([this] { emit cancelled(); });
            return;
        }
        const QString message = QString::fromUtf8(e.what());
        finish([this, message] { emit failed(message); });
    } catch (const std::exception &e) {
        const QString message = QString::fromUtf8(e.what());
        finish([this, message] { emit failed(message); });
    }
}

} // namespace atlas
