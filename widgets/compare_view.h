#pragma once

#include "atlas_view.h"
#include "diff.h"

class QLineEdit;
class QPushButton;

namespace atlas {

class ChartWidget;

// The diff of the current checkpoint against B, computed by B's loader on its worker thread.
struct PreparedDiff final : PreparedView
{
    std::shared_ptr<const CheckpointDiff> diff;
};

// The current checkpoint (A) against a second one (B): the summary sentence, the grouped changes
// (filterable), the budget side by side, and the router biases layer by layer.
class CompareView final : public AtlasView
{
    Q_OBJECT
public:
    explicit CompareView(QWidget *parent = nullptr);
    QString title() const override { return tr("Compare"); }
    QString fileStem() const override { return QStringLiteral("compare"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void setBiases(std::shared_ptr<const BiasAudit> audit) override;
    void clearAll() override;
    QString provenanceNote() const override;
    bool hasComparison() const { return m_b != nullptr; } // a B to compare A with

    // B, and the diff computed against A off the GUI thread (by whoever loaded B).
    void setComparison(std::shared_ptr<const LoadedCheckpoint> b, std::shared_ptr<const CheckpointDiff> diff,
                       const QString &label);
    void setComparisonBiases(std::shared_ptr<const BiasAudit> audit);
    void showComparisonStarted(const QString &label);
    void showComparisonFailure(const QString &message);
    void showComparisonCancelled(const QString &label);

    QString summaryText() const;
    QString leadText() const;
    QTableWidget *changes() const { return m_changes; }
    QTableWidget *biasTable() const { return m_biases; }
    ChartWidget *budgetChart() const { return m_chart; }
    void setFilterText(const QString &text);

signals:
    void compareRequested(); // the "Compare With…" button

private:
    void showDiff();
    void showBiases();
    void applyFilter();
    std::shared_ptr<const LoadedCheckpoint> m_a, m_b;
    std::shared_ptr<const BiasAudit> m_biasesA, m_biasesB;
    std::shared_ptr<const CheckpointDiff> m_diff;
    QLabel *m_sources;
    QLabel *m_summary;
    QLabel *m_lead;     // one sentence per kind of change, the biggest first
    QLabel *m_empty;    // before a comparison: why the view is empty and what to do
    QWidget *m_results; // the filter, the changes, the chart and the biases
    QPushButton *m_compare;
    QLineEdit *m_filter;
    QTableWidget *m_changes;
    ChartWidget *m_chart;
    QTableWidget *m_biases;
};

} // namespace atlas
