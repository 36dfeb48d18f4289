#pragma once

#include "atlas_view.h"

class QTableWidget;

namespace atlas {

// The layer strip: one cell per layer, full / shared / MTP, with which full layer each shared one reuses.
class IndexStrip final : public QWidget
{
    Q_OBJECT
public:
    explicit IndexStrip(QWidget *parent = nullptr);
    void setLayers(std::vector<LayerInfo> layers);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    static QColor roleColor(IndexerRole role, bool mtp);
    int layerAt(QPointF pos) const; // the layer whose cell is under pos, or -1
    static QString describe(const LayerInfo &l);

signals:
    void layerClicked(int layer);

protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;

private:
    std::vector<LayerInfo> m_layers;
};

class IndexShareView final : public AtlasView
{
    Q_OBJECT
public:
    explicit IndexShareView(QWidget *parent = nullptr);
    QString title() const override { return tr("IndexShare"); }
    QString fileStem() const override { return QStringLiteral("indexshare"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void clearAll() override;
    void followLayer(int layer) override;
    QTableWidget *table() const { return m_table; }
    QString summaryText() const;

private:
    IndexStrip *m_strip;
    QLabel *m_summary;
    QLabel *m_mismatches;
    QTableWidget *m_table;
    bool m_offsetGiven = false;
};

} // namespace atlas
