#pragma once

#include "atlas_view.h"

class QTableWidget;

namespace atlas {

class ChartWidget;

// Total and active parameters by category: bars and a table of counts and shares.
class BudgetView final : public AtlasView
{
    Q_OBJECT
public:
    explicit BudgetView(QWidget *parent = nullptr);
    QString title() const override { return tr("Budget"); }
    QString fileStem() const override { return QStringLiteral("budget"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void clearAll() override;
    ChartWidget *chart() const { return m_chart; }
    // Where the parameters, the active ones and the stored bytes go: one linear stacked bar each, by category.
    ChartWidget *sharesChart() const { return m_shares; }
    QTableWidget *table() const { return m_table; }

private:
    ChartWidget *m_shares;
    ChartWidget *m_chart;
    QTableWidget *m_table;
    QLabel *m_caption;
};

} // namespace atlas
