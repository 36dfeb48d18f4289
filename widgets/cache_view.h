#pragma once

#include "atlas_view.h"
#include "cache_budget.h"
#include "explain.h"
#include "wrap_label.h"

class QComboBox;
class QFormLayout;
class QSpinBox;
class QSlider;
class QTimer;

namespace atlas {

class ChartWidget;

// The cache of every attention kind against context length: per token (MLA latent, index keys, K and V,
// compressed rows) and per sequence (recurrent states, windows, compressor states), for any engine preset.
class CacheView final : public AtlasView
{
    Q_OBJECT
public:
    explicit CacheView(QWidget *parent = nullptr);
    QString title() const override { return tr("Cache"); }
    QString fileStem() const override { return QStringLiteral("cache"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void clearAll() override;

    void setContext(std::uint64_t tokens);
    void setKvDtype(KvDtype dtype);
    void setIndexEntryBytes(int bytes); // 0: as the preset allocates
    void setPreset(CachePreset preset);
    const CacheBudget &budget() const { return m_budget; }
    ChartWidget *chart() const { return m_chart; }
    QString breakdownText() const;
    QLabel *breakdownLabel() const { return m_breakdown; } // its working links (setWorkings)
    QStringList layoutChoices() const; // the KV cache layout picker's labels
    QStringList entryChoices() const;  // the index-key entry picker's labels
    void setStateDtype(StateDtype dtype);
    ChartWidget *partsChart() const { return m_parts; }

signals:
    // After every recomputation: what the view shows now (the Overview card follows it).
    void budgetChanged(const atlas::CacheBudget &budget);

private:
    void recompute();
    QString mlaBreakdown(const CacheBudget &c) const;
    QString kindsBreakdown(const CacheBudget &c) const;
    static QString kindLabel(AttentionKind k);
    void drawParts(const CacheBudget &c);
    void drawCurves(const CacheBudget &c);
    std::shared_ptr<const LoadedCheckpoint> m_data;
    CacheBudget m_budget;
    QSpinBox *m_context;
    QSlider *m_slider;
    // The contexts the slider stops at: 1 K, 2 K, 4 K, ... and the model's own maximum (the spin box takes
    // any other); the slider's value is an index into them.
    std::vector<int> m_stops{1};
    int stopAtOrBelow(int tokens) const;
    void setStops(int maximum);
    QComboBox *m_kv;
    QComboBox *m_llamaType; // llama.cpp's -ctk / -ctv, for its preset (in place of the KV layout)
    QFormLayout *m_form = nullptr;
    void showPresetRows();
    QComboBox *m_preset;
    QComboBox *m_entry;
    QComboBox *m_state;
    ChartWidget *m_chart;
    ChartWidget *m_parts; // per kind: what grows with the context (at the chosen one) and what is fixed
    WrapLabel *m_breakdown;
    // While the slider moves, the breakdown's text (a wrapped rich-text label: 9 ms of layout each time,
    // half of a slider step in bench_gui) follows once the slider rests; the charts follow at once.
    bool m_sliding = false;
    QTimer *m_textTimer;
    QString m_pendingText;
    Explanations m_pendingWorking;
};

} // namespace atlas
