#include "layers_view.h"

#include "layer_tree_model.h"
#include "text_cell_delegate.h"
#include "wrap_label.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QAction>
#include <QGuiApplication>
#include <QClipboard>
#include <QMenu>
#include <QSortFilterProxyModel>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

namespace atlas {

namespace {

// Shows the rows the tree model marked for the filter: no string matching and no recursion here,
// so a filter over 118,629 tensors costs one pass in the model and lazy mapping in the proxy.
class MarkedRowsProxy final : public QSortFilterProxyModel
{
public:
    using QSortFilterProxyModel::QSortFilterProxyModel;
    // The rows shown again; sorted by a total, sorted again too (a filter changes the totals, not the rows'
    // order, and the proxy re-sorts only on a layout change).
    void refresh()
    {
        invalidateFilter();
        if (sortColumn() == LayerTreeModel::Parameters || sortColumn() == LayerTreeModel::Bytes) invalidate();
    }

protected:
    bool filterAcceptsRow(int row, const QModelIndex &parent) const override
    {
        return static_cast<const LayerTreeModel *>(sourceModel())->isShown(row, parent);
    }
};

} // namespace

LayersView::LayersView(QWidget *parent)
    : AtlasView(parent), m_model(new LayerTreeModel(this)), m_proxy(new MarkedRowsProxy(this)),
      m_tree(new QTreeView(this)), m_filter(new QLineEdit(this)), m_debounce(new QTimer(this)),
      m_summary(makeCaption(QString(), this)), m_noMatch(new WrapLabel(this)), m_count(makeCaption(QString(), this))
{
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(LayerTreeModel::SortRole);

    m_tree->setModel(m_proxy);
    m_tree->setItemDelegate(new TextCellDelegate(m_tree)); // each text laid out once, not at every paint
    m_tree->setUniformRowHeights(true); // smooth with 118,629 tensors
    m_tree->setAlternatingRowColors(true);
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(LayerTreeModel::Name, Qt::AscendingOrder);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(LayerTreeModel::Name, QHeaderView::Stretch);
    for (int c = LayerTreeModel::Dtype; c < LayerTreeModel::ColumnCount; ++c)
        m_tree->header()->setSectionResizeMode(c, QHeaderView::Interactive);
    // The name takes what the other columns leave: they stay narrow (a shard's file name elides), so a
    // 1024-pixel window reads a layer's kind and most of its note.
    m_tree->setColumnWidth(LayerTreeModel::Dtype, 120); // "BF16 + F8_E4M3"
    // Shard files differ at their end ("model-00004-of-00141"): elided in the middle, never there.
    m_tree->setTextElideMode(Qt::ElideMiddle);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_tree, &QWidget::customContextMenuRequested, this, [this](const QPoint &at) {
        const QModelIndex index = m_tree->indexAt(at);
        if (!index.isValid()) return;
        QMenu menu(this);
        const auto copy = [this, index](CopyWhat what) {
            QGuiApplication::clipboard()->setText(copyText(index, what));
        };
        menu.addAction(tr("Copy &Name"), this, [copy] { copy(CopyWhat::Name); });
        QAction *shape = menu.addAction(tr("Copy &Shape"), this, [copy] { copy(CopyWhat::Shape); });
        shape->setEnabled(!copyText(index, CopyWhat::Shape).isEmpty());
        menu.addAction(tr("Copy &Dtype"), this, [copy] { copy(CopyWhat::Dtype); });
        menu.addAction(tr("Copy &Row"), this, [copy] { copy(CopyWhat::Row); });
        menu.exec(m_tree->viewport()->mapToGlobal(at));
    });
    // Ctrl+C copies the selected row's full name.
    auto *copyName = new QAction(this);
    copyName->setShortcut(QKeySequence::Copy);
    copyName->setShortcutContext(Qt::WidgetShortcut);
    connect(copyName, &QAction::triggered, this, [this] {
        if (m_tree->currentIndex().isValid())
            QGuiApplication::clipboard()->setText(copyText(m_tree->currentIndex(), CopyWhat::Name));
    });
    m_tree->addAction(copyName);
    m_tree->setColumnWidth(LayerTreeModel::Shape, 95);
    m_tree->setColumnWidth(LayerTreeModel::Parameters, 115);
    m_tree->setColumnWidth(LayerTreeModel::Bytes, 85);
    m_tree->setColumnWidth(LayerTreeModel::Shard, 120);

    m_filter->setPlaceholderText(tr("Filter tensors, modules or layers (e.g. indexer, e_score, experts.17)"));
    m_filter->setClearButtonEnabled(true);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(250);
    connect(m_filter, &QLineEdit::textChanged, m_debounce, qOverload<>(&QTimer::start));
    connect(m_debounce, &QTimer::timeout, this, &LayersView::applyFilter);

    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    auto *top = new QHBoxLayout();
    top->addWidget(makeHeading(tr("Layers"), this));
    top->addStretch(1);
    top->addWidget(m_summary);
    v->addLayout(top);
    auto *filterRow = new QHBoxLayout();
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_count);
    v->addLayout(filterRow);
    m_noMatch->setWordWrap(true);
    m_noMatch->setTextFormat(Qt::PlainText);
    m_noMatch->setAlignment(Qt::AlignCenter);
    m_noMatch->hide();
    v->addWidget(m_noMatch);
    v->addWidget(m_tree, 1);
}

void LayersView::focusFilter()
{
    m_filter->setFocus(Qt::ShortcutFocusReason);
    m_filter->selectAll();
}

QString LayersView::noMatchText() const
{
    return m_noMatch->isHidden() ? QString() : m_noMatch->text();
}

QString LayersView::copyText(const QModelIndex &proxyIndex, CopyWhat what) const
{
    const QModelIndex row = proxyIndex.siblingAtColumn(LayerTreeModel::Name);
    const auto column = [&](int c) { return proxyIndex.siblingAtColumn(c).data(Qt::DisplayRole).toString(); };
    switch (what) {
    case CopyWhat::Name: {
        // A tensor's full name is its tooltip; a group's is its own name (without the note).
        const QString tip = row.data(Qt::ToolTipRole).toString();
        if (!tip.isEmpty()) return tip;
        return column(LayerTreeModel::Name).section(QStringLiteral("   ·   "), 0, 0);
    }
    case CopyWhat::Shape:
        return column(LayerTreeModel::Shape);
    case CopyWhat::Dtype:
        return column(LayerTreeModel::Dtype);
    case CopyWhat::Row: {
        QStringList cells{copyText(proxyIndex, CopyWhat::Name)};
        for (int c = LayerTreeModel::Dtype; c < LayerTreeModel::ColumnCount; ++c)
            cells << column(c);
        return cells.join(QLatin1Char('\t'));
    }
    }
    return {};
}

void LayersView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    setCheckpoint(data, nullptr);
}

std::shared_ptr<const PreparedView> LayersView::prepare(const LoadedCheckpoint &data) const
{
    auto prepared = std::make_shared<PreparedTree>();
    prepared->tree = LayerTreeModel::buildTree(data);
    return prepared;
}

void LayersView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                               std::shared_ptr<const PreparedView> prepared)
{
    const auto *tree = dynamic_cast<const PreparedTree *>(prepared.get());
    if (tree && tree->tree)
        m_model->setCheckpoint(data, tree->tree);
    else
        m_model->setCheckpoint(data);
    m_summary->setText(tr("%1 tensors in %2 layers; parameters exclude quantization scales")
                           .arg(groupDigitsQ(m_model->tensorCount()))
                           .arg(data->analysis.layers.size()));
    applyFilter();
}

void LayersView::clearAll()
{
    m_model->setCheckpoint(nullptr);
    m_summary->clear();
    m_count->clear();
    m_noMatch->hide();
    m_tree->show();
    m_matches = -1;
}

void LayersView::setFilterText(const QString &text)
{
    m_filter->setText(text);
    m_debounce->stop();
    applyFilter();
}

void LayersView::applyFilter()
{
    const QString text = m_filter->text();
    m_model->setFilter(text);
    static_cast<MarkedRowsProxy *>(m_proxy)->refresh();
    if (text.isEmpty()) {
        m_matches = -1;
        m_count->clear();
        m_noMatch->hide();
        m_tree->show();
        m_tree->collapseAll();
        return;
    }
    m_matches = qint64(m_model->matchCount());
    // Nothing matches: a sentence, not a blank pane.
    m_noMatch->setText(tr("No tensor name contains “%1” (the filter matches any part of the full name, ignoring "
                          "case: e.g. indexer, e_score, experts.17).")
                           .arg(text));
    m_noMatch->setVisible(m_matches == 0);
    m_tree->setVisible(m_matches != 0);
    m_count->setText(tr("%1 of %2 tensors match")
                         .arg(groupDigitsQ(std::uint64_t(m_matches)), groupDigitsQ(m_model->tensorCount())));
    // A few matches are worth seeing at once; thousands would only bury the tree.
    if (m_matches > 0 && m_matches <= kExpandMatches)
        m_tree->expandAll();
    else
        m_tree->collapseAll();
}

} // namespace atlas
