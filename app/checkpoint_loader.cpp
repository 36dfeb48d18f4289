#include "checkpoint_loader.h"

#include "bias_reader.h"
#include "checkpoint_reader.h"
#include "demo.h"
#include "errors.h"

#include <QMetaObject>

namespace atlas {

namespace {
enum Counter { FilesDone, FilesTotal, Bytes, Requests };
}

CheckpointLoader::CheckpointLoader(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const LoadedCheckpoint>>();
    qRegisterMetaType<std::shared_ptr<const BiasAudit>>();
    // Progress is polled, so the worker never floods the event loop: ten updates a second at most.
    m_progressTimer.setInterval(100);
    connect(&m_progressTimer, &QTimer::timeout, this, [this] {
        if (const Job *job = m_jobs.current())
            emit progress(job->counters[FilesDone], job->counters[FilesTotal], job->counters[Bytes],
                          job->counters[Requests]);
    });
}

CheckpointLoader::~CheckpointLoader() = default;

void CheckpointLoader::cancel()
{
    if (m_running) m_jobs.cancel();
}

void CheckpointLoader::startDemo(const NetworkOptions &options)
{
    start(SourceSpec{}, options);
}

void CheckpointLoader::start(const SourceSpec &spec, const NetworkOptions &options)
{
    m_running = true;
    m_clock.start();
    m_layoutMs = m_totalMs = -1;
    m_progressTimer.start();
    const bool demo = spec.kind == SourceSpec::Kind::Local && spec.path.empty();
    NetworkOptions network = options;
    if (m_timeoutSeconds > 0) network.timeoutSeconds = m_timeoutSeconds;
    m_jobs.start(
        [this, spec, network, demo](const std::shared_ptr<Job> &job) { run(spec, network, demo, job); });
}

void CheckpointLoader::run(SourceSpec spec, NetworkOptions options, bool demo,
                           const std::shared_ptr<Job> &jobRef)
{
    Job &job = *jobRef;
    auto finish = [this, &jobRef](auto signal) {
        deliver(jobRef, [this, signal, jobRef] {
            const Job &job = *jobRef;
            m_running = false;
            m_totalMs = m_clock.elapsed();
            m_progressTimer.stop();
            emit progress(job.counters[FilesDone], job.counters[FilesTotal], job.counters[Bytes],
                          job.counters[Requests]);
            signal();
        });
    };
    try {
        if (demo) {
            deliver(jobRef, [this] { emit stage(tr("Preparing the synthetic demo checkpoint…")); });
            spec.path = ensureDemoCheckpoint().string();
        }
        deliver(jobRef, [this] { emit stage(tr("Reading headers…")); });
        OpenedSource opened = openSource(spec, options, &job.cancel);
        ReadOptions read;
        read.cache = opened.cache.get();
        read.progress = [&job](const LoadProgress &p) {
            job.counters[FilesDone] = p.filesDone;
            job.counters[FilesTotal] = p.filesTotal;
            job.counters[Bytes] = p.bytes;
            job.counters[Requests] = p.requests;
        };
        auto loaded = std::make_shared<LoadedCheckpoint>();
        loaded->checkpoint = readCheckpoint(*opened.source, read);
        loaded->analysis = analyze(loaded->checkpoint);
        std::shared_ptr<const LoadedCheckpoint> layout = loaded;
        deliver(jobRef, [this, layout] {
            m_layoutMs = m_clock.elapsed();
            emit layoutReady(layout);
        });

        deliver(jobRef, [this] { emit stage(tr("Reading the router correction biases…")); });
        const BiasFetchPlan plan = planBiasFetch(layout->checkpoint);
        auto audit = std::make_shared<BiasAudit>(
            auditBiases(layout->checkpoint.config, readBiases(*opened.source, plan), plan.bytes));
        job.counters[Bytes] = opened.source->bytesReceived();
        job.counters[Requests] = opened.source->requestsMade();
        std::shared_ptr<const BiasAudit> biases = audit;
        deliver(jobRef, [this, biases] { emit biasesReady(biases); });
        finish([this] { emit finished(); });
    } catch (const AtlasError &e) {
        if (job.cancel) {
            finish([this] { emit cancelled(); });
            return;
        }
        const QString message = QString::fromUtf8(e.what());
        const int kind = static_cast<int>(e.kind());
        finish([this, message, kind] { emit failed(message, kind); });
    } catch (const std::bad_alloc &) {
        finish([this] {
            emit failed(tr("out of memory while reading the checkpoint"), int(ErrorKind::Invalid));
        });
    } catch (const std::exception &e) {
        const QString message = QString::fromUtf8(e.what());
        finish([this, message] { emit failed(message, int(ErrorKind::Source)); });
    }
}

} // namespace atlas
