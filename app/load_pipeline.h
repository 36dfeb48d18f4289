#pragma once

#include "cache_budget.h"
#include "checkpoint_reader.h"
#include "loaded_checkpoint.h"
#include "receipts.h"
#include "routing.h"
#include "source_spec.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace atlas {

// What one load is asked to produce. A Local spec with an empty path opens the embedded demo.
struct LoadRequest
{
    SourceSpec spec;
    NetworkOptions network;
    CacheOptions cache;
    bool biases = true;
    std::vector<std::string> biasTensors; // audited beside the correction biases
    bool simulate = false;
    RoutingOptions routing;
    std::string logitsFile; // captured logits for the simulation
};

enum class LoadStage { PreparingDemo, Headers, Biases, Routing };

// What a load produced, stage by stage; later parts are empty when they were not asked for.
struct LoadResult
{
    std::shared_ptr<const LoadedCheckpoint> layout; // with the cache budget at the chosen context
    std::shared_ptr<const BiasAudit> biases;
    std::shared_ptr<const RoutingRun> routing;
    std::shared_ptr<ReceiptLog> receipts; // remote sources only
};

// Hears of a load as it goes, on the thread that runs it.
struct LoadObserver
{
    std::function<void(LoadStage)> stage;
    std::function<void(const LoadProgress &)> progress;
    std::function<void(std::shared_ptr<const LoadedCheckpoint>)> layout;
    std::function<void(std::shared_ptr<const BiasAudit>)> biases;
};

// The one way a checkpoint is loaded, by the command line, the window, figures and the benchmarks:
// open the source, read and analyse the layout, the cache budget at the chosen context, the biases,
// the routing simulation. Throws AtlasError; a raised cancel flag ends it with "cancelled".
class LoadPipeline final
{
public:
    explicit LoadPipeline(LoadRequest request) : m_request(std::move(request)) {}
    LoadResult run(const std::atomic<bool> *cancel = nullptr, const LoadObserver &observer = {});
    // Every request made, also after a failure (empty for local folders).
    const std::shared_ptr<ReceiptLog> &receipts() const { return m_receipts; }
    bool remote() const { return m_request.spec.kind != SourceSpec::Kind::Local; }

private:
    LoadRequest m_request;
    std::shared_ptr<ReceiptLog> m_receipts = std::make_shared<ReceiptLog>();
};

// The ckpt-atlas.report/1 report of a load, and its readable form: built here and nowhere else.
nlohmann::ordered_json buildReport(const LoadResult &result);
std::string formatReport(const LoadResult &result);

} // namespace atlas
