#pragma once

#include "atlas_view.h"
#include "capacity_plan.h"
#include "deployment_search.h"
#include "wrap_label.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace atlas {

class ChartWidget;

// What it takes to serve the checkpoint: pick the GPU, how many and the parallelism; a stacked bar per
// GPU (replicated, split, experts, reserve, cache room), the tokens and sequences that fit, and the
// verdict on top, re-planned as the user types (the placement sums are found once, off the GUI thread).
class PlanView final : public AtlasView
{
    Q_OBJECT
public:
    bool ggufNoteShown() const; // a GGUF copy: the note on whose plans these are
    explicit PlanView(QWidget *parent = nullptr);
    QString title() const override { return tr("Plan"); }
    QString fileStem() const override { return QStringLiteral("plan"); }
    std::shared_ptr<const PreparedView> prepare(const LoadedCheckpoint &data) const override;
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                       std::shared_ptr<const PreparedView> prepared) override;
    void clearAll() override;
    void themeChanged() override;

    // The Cache view's settings (preset, dtypes): what the plan counts when "Cache" says so.
    void setCacheBudget(const CacheBudget &budget);
    void setCacheFromCacheView(bool fromCacheView);
    void setCustomGpuMemory(double gib); // selects "custom" in the GPU list
    void setGpus(int gpus);
    void setContext(int tokens);
    void setPipelineStages(int pp);
    void setEngine(PlanEngine engine);
    void setGpu(const QString &name);
    void setMtp(bool load); // load the MTP layers (speculative decoding), when the checkpoint has them
    // The smallest deployments of the chosen GPU (plan --search), computed off the GUI thread by whoever
    // listens to searchWanted; drawn as the Pareto chart, a click on a point sets the plan to it.
    void setSearch(const DeploymentSearch &search);
    void pickDeployment(int gpus); // the Pareto point with this GPU count (or the nearest)
    void setDeployment(const SearchPoint &point); // its GPU count and layout
    void searchFailed(const QString &why, std::uint64_t serial = 0); // no answer will come: said in the chart
    void resetParallelism();                // TP from the GPUs, no EP, no DP attention, one stage
    QString verdict() const;
    QString detailsText() const; // the per-GPU figures and the notes, as shown
    QLabel *detailsLabel() const { return m_details; } // its working links (setWorkings)
    const CapacityPlan *plan() const { return m_plan ? &*m_plan : nullptr; }
    ChartWidget *chart() const { return m_chart; }
    ChartWidget *paretoChart() const { return m_pareto; }
    const std::vector<SearchPoint> &pareto() const { return m_points; }
    bool searchPending() const { return m_searchPending; }

signals:
    // The search the Pareto chart needs, when what it depends on changed (GPU, engine, context, MTP,
    // cache settings); the answer comes back through setSearch.
    void searchWanted(const SearchOptions &options);
    void searchShown(); // setSearch drew an answer

private:
    struct PreparedPlan final : PreparedView
    {
        PlacementTotals withoutMtp, withMtp;
    };
    void replan();
    void showEvent(QShowEvent *event) override;
    bool m_stale = false; // a cache budget came while hidden
    std::shared_ptr<const LoadedCheckpoint> m_data;
    std::shared_ptr<const PreparedPlan> m_prepared;
    std::optional<CapacityPlan> m_plan;
    std::optional<CacheBudget> m_cache;
    // The cache the plan counts: the engine's own unless the user picks the Cache view's settings or sets a
    // KV or state dtype here.
    CacheBudget planCache(const PlanOptions &o) const;
    // In the order the constructor makes them (their tab order).
    QComboBox *m_gpu, *m_engine;
    QSpinBox *m_gpus, *m_tp, *m_ep, *m_dp, *m_pp, *m_redundant, *m_context;
    QComboBox *m_cacheFrom, *m_kv, *m_state;
    QDoubleSpinBox *m_customGib;
    QDoubleSpinBox *m_fraction, *m_reserve;
    QCheckBox *m_mtp;
    WrapLabel *m_verdict;
    QLabel *m_ggufNote = nullptr; // a GGUF copy: these engines serve the safetensors checkpoint
    WrapLabel *m_details;
    ChartWidget *m_chart;
    ChartWidget *m_pareto;
    void drawPareto();
    void clearPareto(); // no points, no search shown
    void dropSearch();  // no search asked either: the key forgotten, a late answer ignored
    void showVerdict(); // the search's series for the MTP setting shown, the other one faint beside it
    std::optional<DeploymentSearch> m_search;
    bool m_drawnMtp = false;
    std::vector<SearchPoint> m_points; // the drawn series (click targets)
    QString m_searchKey; // what the shown (or asked) search was for
    bool m_searchPending = false;
    std::uint64_t m_searchSerial = 0; // the newest request's
};

} // namespace atlas
