#include "load_pipeline.h"

#include "bias_reader.h"
#include "bias_report.h"
#include "demo.h"
#include "errors.h"
#include "logits_reader.h"
#include "report.h"

namespace atlas {

namespace {

void tell(const LoadObserver &o, LoadStage stage)
{
    if (o.stage) o.stage(stage);
}

std::shared_ptr<const RoutingRun> simulate(const BiasAudit &audit, const LoadRequest &request,
                                           const std::atomic<bool> *cancel)
{
    if (!audit.router)
        throw AtlasError(ErrorKind::Invalid, "cannot simulate routing: " + audit.routerProblem);
    RoutingOptions options = request.routing;
    options.cancel = cancel;
    std::optional<CapturedLogits> captured;
    if (!request.logitsFile.empty()) {
        captured = readLogitsFile(request.logitsFile);
        options.captured = &*captured;
    }
    return std::make_shared<const RoutingRun>(simulateRouting(audit.routing, *audit.router, options));
}

} // namespace

LoadResult LoadPipeline::run(const std::atomic<bool> *cancel, const LoadObserver &observer)
{
    LoadResult result;
    SourceSpec spec = m_request.spec;
    if (spec.kind == SourceSpec::Kind::Local && spec.path.empty()) {
        tell(observer, LoadStage::PreparingDemo);
        spec.path = ensureDemoCheckpoint().string();
    }

    tell(observer, LoadStage::Headers);
    OpenedSource opened = openSource(spec, m_request.network, cancel, m_receipts);
    if (opened.receipts) result.receipts = opened.receipts;
    ReadOptions read;
    read.cache = opened.cache.get();
    read.gguf = {spec.ggufFile, spec.ggufPattern};
    read.progress = observer.progress;
    auto loaded = std::make_shared<LoadedCheckpoint>();
    loaded->checkpoint = readCheckpoint(*opened.source, read);
    stopIfCancelled(cancel);
    loaded->analysis = analyze(loaded->checkpoint, cancel);
    stopIfCancelled(cancel);
    loaded->cache = computeCacheBudget(loaded->checkpoint, loaded->analysis, m_request.cache);
    result.layout = loaded;
    if (observer.layout) observer.layout(result.layout);

    if (!m_request.biases && !m_request.simulate) return result;
    tell(observer, LoadStage::Biases);
    stopIfCancelled(cancel);
    const BiasFetchPlan plan = planBiasFetch(loaded->checkpoint, m_request.biasTensors);
    auto biasBytes = readBiases(*opened.source, plan);
    stopIfCancelled(cancel);
    result.biases = std::make_shared<const BiasAudit>(
        auditBiases(loaded->checkpoint.config, loaded->analysis, std::move(biasBytes), plan.bytes));
    stopIfCancelled(cancel);
    if (observer.progress) {
        LoadProgress p;
        p.filesDone = p.filesTotal = loaded->checkpoint.shards.size();
        p.bytes = opened.source->bytesReceived();
        p.requests = opened.source->requestsMade();
        observer.progress(p);
    }
    if (observer.biases) observer.biases(result.biases);

    if (!m_request.simulate) return result;
    stopIfCancelled(cancel);
    tell(observer, LoadStage::Routing);
    result.routing = simulate(*result.biases, m_request, cancel);
    return result;
}

nlohmann::ordered_json buildReport(const LoadResult &r)
{
    const LoadedCheckpoint &l = *r.layout;
    auto report = buildReport(l.checkpoint, l.analysis, l.cache);
    if (r.biases) report["biases"] = biasesJson(r.biases->stats, r.biases->bytesRead, r.biases->kind);
    if (r.routing) report["routing"] = routingJson(*r.routing);
    if (r.receipts)
        report["network"] = {{"requests", r.receipts->requests()},
                             {"bytes", r.receipts->bytes()},
                             {"seconds", r.receipts->elapsedSeconds()}};
    return report;
}

std::string formatReport(const LoadResult &r)
{
    const LoadedCheckpoint &l = *r.layout;
    std::string text = formatSummary(l.checkpoint, l.analysis, l.cache);
    if (r.biases) text += formatBiasTable(r.biases->stats, r.biases->bytesRead, r.biases->kind);
    if (r.routing) text += formatRoutingTable(*r.routing);
    return text;
}

} // namespace atlas
