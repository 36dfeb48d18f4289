#pragma once

#include "atlas_view.h"
#include "cache_budget.h"

class QComboBox;
class QSpinBox;
class QSlider;

namespace atlas {

class ChartWidget;

// MLA latent and index-key cache against context length, for any KV dtype and index entry size.
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
    QStringList layoutChoices() const; // the KV cache layout picker's labels
    QStringList entryChoices() const;  // the index-key entry picker's labels

private:
    void recompute();
    QString mlaBreakdown(const CacheBudget &c) const;
    void drawCurves(const CacheBudget &c);
    std::shared_ptr<const LoadedCheckpoint> m_data;
    CacheBudget m_budget;
    QSpinBox *m_context;
    QSlider *m_slider;
    QComboBox *m_kv;
    QComboBox *m_preset;
    QComboBox *m_entry;
    ChartWidget *m_chart;
    QLabel *m_breakdown;
};

} // namespace atlas
