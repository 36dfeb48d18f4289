#pragma once

#include "atlas_view.h"

class QComboBox;
class QTableWidget;

namespace atlas {

class ChartWidget;

// The correction biases: one layer's FP32 values with the BF16 levels over them, the level counts
// across layers, and the per-layer table.
class BiasView final : public AtlasView
{
    Q_OBJECT
public:
    explicit BiasView(QWidget *parent = nullptr);
    QString title() const override { return tr("Router bias"); }
    QString fileStem() const override { return QStringLiteral("router-bias"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void setBiases(std::shared_ptr<const BiasAudit> audit) override;
    void clearAll() override;

    void selectLayer(int layer);
    ChartWidget *histogram() const { return m_histogram; }
    ChartWidget *levels() const { return m_levels; }
    QTableWidget *table() const { return m_table; }
    QString statusText() const;
    // The checkpoint-wide table's cards, by name ("Layers losing levels", ...), for tests.
    QString summaryValue(const QString &name) const;

public:
    void followLayer(int layer) override { selectLayer(layer); }
    QString selectedLayerText() const; // the layer picker's text

private:
    static QString storedDtypes(const std::vector<BiasStats> &stats);
    void showLayer();
    std::shared_ptr<const BiasAudit> m_audit;
    QLabel *m_heading;
    QLabel *m_status;
    QWidget *m_body; // the layer row, charts and table: hidden when there is nothing to show
    QComboBox *m_layer;
    QLabel *m_layerSummary;
    ChartWidget *m_histogram;
    ChartWidget *m_levels;
    QTableWidget *m_table;
    QList<QPair<QString, QLabel *>> m_summary; // card name, value
};

} // namespace atlas
