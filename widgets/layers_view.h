#pragma once

#include "atlas_view.h"
#include "layer_tree_model.h"

class QLineEdit;
class QSortFilterProxyModel;
class QTimer;
class QTreeView;
class QLabel;

namespace atlas {

// The layer tree with a debounced filter.
class LayersView final : public AtlasView
{
    Q_OBJECT
public:
    explicit LayersView(QWidget *parent = nullptr);
    QString title() const override { return tr("Layers"); }
    QString fileStem() const override { return QStringLiteral("layers"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    // The tree of 118,629 rows is built by prepare(), off the GUI thread.
    std::shared_ptr<const PreparedView> prepare(const LoadedCheckpoint &data) const override;
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                       std::shared_ptr<const PreparedView> prepared) override;
    void clearAll() override;

    LayerTreeModel *model() const { return m_model; }
    QSortFilterProxyModel *proxy() const { return m_proxy; }
    QTreeView *tree() const { return m_tree; }
    void setFilterText(const QString &text); // as if typed, then applied at once
    void focusFilter();                      // Ctrl+F: the filter, its text selected
    // What the row's context menu copies: the tensor's full name (a group's own name), its shape, dtype,
    // or the row's columns separated by tabs.
    enum class CopyWhat { Name, Shape, Dtype, Row };
    QString copyText(const QModelIndex &proxyIndex, CopyWhat what) const;
    QString noMatchText() const; // the sentence shown when nothing matches ("" otherwise)
    // Tensors the filter matches (-1 without a filter); the matches are expanded up to kExpandMatches.
    qint64 matchCount() const { return m_matches; }
    static constexpr qint64 kExpandMatches = 1000;

private:
    struct PreparedTree final : PreparedView
    {
        std::shared_ptr<const LayerTreeModel::Tree> tree;
    };
    void applyFilter();
    LayerTreeModel *m_model;
    QSortFilterProxyModel *m_proxy;
    QTreeView *m_tree;
    QLineEdit *m_filter;
    QTimer *m_debounce;
    QLabel *m_summary;
    QLabel *m_noMatch;
    QLabel *m_count;
    qint64 m_matches = -1;
};

} // namespace atlas
