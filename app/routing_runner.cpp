#include "routing_runner.h"

#include "errors.h"
#include "logits_reader.h"

namespace atlas {

RoutingRunner::RoutingRunner(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<std::shared_ptr<const RoutingRun>>();
}

void RoutingRunner::cancel()
{
    m_jobs.cancel();
}

void RoutingRunner::discard()
{
    m_jobs.forget();
    m_running = false;
}

void RoutingRunner::start(RoutingRequest request)
{
    m_running = true;
    m_jobs.start([this, request = std::move(request)](const std::shared_ptr<JobThreads::Job> &job) mutable {
        auto finish = [this, &job](auto fn) {
            m_jobs.deliver(this, job, [this, fn] {
                m_running = false;
                fn();
            });
        };
        try {
            std::optional<CapturedLogits> captured;
            if (!request.logitsFile.empty()) {
                captured = readLogitsFile(request.logitsFile);
                request.options.captured = &*captured;
            }
            request.options.cancel = &job->cancel;
            request.options.routed = &job->counters[0];
            auto run = std::make_shared<const RoutingRun>(
                simulateRouting(request.biases, request.router, request.options));
            finish([this, run] { emit finished(run); });
        } catch (const std::exception &e) {
            if (job->cancel) {
                finish([this] { emit cancelled(); });
                return;
            }
            const QString message =
                dynamic_cast<const std::bad_alloc *>(&e) ? tr("out of memory") : QString::fromUtf8(e.what());
            finish([this, message] { emit failed(message); });
        }
    });
}

} // namespace atlas
