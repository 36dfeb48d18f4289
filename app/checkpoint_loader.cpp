#include "checkpoint_loader.h"

#include "errors.h"
#include "load_pipeline.h"

#include <QMetaObject>

namespace atlas {

namespace {
enum Counter { FilesDone, FilesTotal, Bytes, Requests };
}

CheckpointLoader::CheckpointLoader(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const LoadedCheckpoint>>();
    qRegisterMetaType<std::shared_ptr<const BiasAudit>>();
    qRegisterMetaType<std::shared_ptr<const PreparedViews>>();
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

void CheckpointLoader::discard()
{
    m_jobs.forget();
    m_running = false;
    m_progressTimer.stop();
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
    m_jobs.start([this, spec, options, preparer = m_preparer](const std::shared_ptr<Job> &job) {
        run(spec, options, preparer, job);
    });
}

void CheckpointLoader::run(SourceSpec spec, NetworkOptions options, const Preparer &preparer,
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
        LoadRequest request;
        request.spec = spec;
        request.network = options;
        LoadObserver observer;
        observer.stage = [this, &jobRef](LoadStage loadStage) {
            QString what;
            switch (loadStage) {
            case LoadStage::PreparingDemo:
                what = tr("Preparing the synthetic demo checkpoint…");
                break;
            case LoadStage::Headers:
                what = tr("Reading headers…");
                break;
            case LoadStage::Biases:
                what = tr("Reading the router biases…");
                break;
            case LoadStage::Routing:
                what = tr("Simulating routing…");
                break;
            }
            deliver(jobRef, [this, what] { emit stage(what); });
        };
        observer.progress = [&job](const LoadProgress &p) {
            job.counters[FilesDone] = p.filesDone;
            job.counters[FilesTotal] = p.filesTotal;
            job.counters[Bytes] = p.bytes;
            job.counters[Requests] = p.requests;
        };
        observer.layout = [this, &jobRef, &preparer](std::shared_ptr<const LoadedCheckpoint> layout) {
            auto prepared =
                std::make_shared<const PreparedViews>(preparer ? preparer(*layout, &jobRef->cancel) : PreparedViews());
            deliver(jobRef, [this, layout, prepared] {
                m_layoutMs = m_clock.elapsed();
                emit layoutReady(layout, prepared);
            });
        };
        observer.biases = [this, &jobRef](std::shared_ptr<const BiasAudit> biases) {
            deliver(jobRef, [this, biases] { emit biasesReady(biases); });
        };
        LoadPipeline(std::move(request)).run(&job.cancel, observer);
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
