#include "indexshare_view.h"

#include "colours.h"

#include "cache_budget.h"
#include "wrap_label.h"

#include <QHeaderView>
#include <QLabel>
#include <QToolTip>
#include <QMouseEvent>
#include <QHelpEvent>
#include <QPainter>
#include <QPainterPath>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace atlas {

namespace {
constexpr int kCell = 13;
constexpr int kGap = 3;
constexpr int kLeft = 8;
} // namespace

IndexStrip::IndexStrip(QWidget *parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QColor IndexStrip::roleColor(IndexerRole role, bool mtp)
{
    // The same greens as the Anatomy view's indexer: one meaning, one colour.
    if (mtp) return toneColor(Tone::Mtp);
    switch (role) {
    case IndexerRole::Full:
        return toneColor(Tone::IndexerOwner);
    case IndexerRole::Shared:
        return toneColor(Tone::IndexerShared);
    case IndexerRole::None:
        break;
    }
    return toneColor(Tone::IndexerNone);
}

void IndexStrip::setLayers(std::vector<LayerInfo> layers)
{
    m_layers = std::move(layers);
    updateGeometry();
    update();
}

QSize IndexStrip::sizeHint() const
{
    return {kLeft * 2 + int(m_layers.size()) * (kCell + kGap), 150};
}

QSize IndexStrip::minimumSizeHint() const
{
    return {200, 150};
}

int IndexStrip::layerAt(QPointF pos) const
{
    if (m_layers.empty()) return -1;
    const int n = int(m_layers.size());
    const double step = std::max(4.0, double(width() - 2 * kLeft) / n);
    const double top = 62, h = 34;
    if (pos.y() < top - 2 || pos.y() > top + h + 2) return -1;
    const int i = int((pos.x() - kLeft) / step);
    return i >= 0 && i < n ? m_layers[std::size_t(i)].index : -1;
}

QString IndexStrip::describe(const LayerInfo &l)
{
    const QString kind = qs(std::string(layerKindName(l.kind)));
    switch (l.indexer) {
    case IndexerRole::Full:
        return tr("Layer %1 (%2): owns a DSA indexer and caches its index keys").arg(l.index).arg(kind);
    case IndexerRole::Shared:
        return l.reusesLayer >= 0 ? tr("Layer %1 (%2): reuses layer %3's top-k selection, no index keys of its own")
                                        .arg(l.index)
                                        .arg(kind)
                                        .arg(l.reusesLayer)
                                  : tr("Layer %1 (%2): reuses an earlier layer's selection").arg(l.index).arg(kind);
    case IndexerRole::None:
        break;
    }
    return tr("Layer %1 (%2): no indexer").arg(l.index).arg(kind);
}

bool IndexStrip::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(e);
        const int layer = layerAt(help->pos());
        for (const auto &l : m_layers)
            if (l.index == layer) {
                QToolTip::showText(help->globalPos(), describe(l), this);
                return true;
            }
        QToolTip::hideText();
        e->ignore();
        return true;
    }
    return QWidget::event(e);
}

void IndexStrip::mousePressEvent(QMouseEvent *event)
{
    if (const int layer = layerAt(event->position()); layer >= 0) emit layerClicked(layer);
}

void IndexStrip::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    if (m_layers.empty()) return;
    const int n = int(m_layers.size());
    // Cells fill the width available.
    const double step = std::max(4.0, double(width() - 2 * kLeft) / n);
    const double cell = std::max(3.0, step - 2);
    const double top = 62, h = 34;
    const QColor text = palette().color(QPalette::WindowText);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.8);
    p.setFont(small);
    for (int i = 0; i < n; ++i) {
        const LayerInfo &l = m_layers[std::size_t(i)];
        const double x = kLeft + i * step;
        const QRectF r(x, top, cell, h);
        p.setPen(Qt::NoPen);
        p.setBrush(roleColor(l.indexer, l.kind == LayerKind::Mtp && l.indexer != IndexerRole::None));
        p.drawRoundedRect(r, 2, 2);
        if (l.indexerWeights != (l.indexer == IndexerRole::Full) && l.kind != LayerKind::Mtp) {
            p.setPen(QPen(QColor(0xC9, 0x4B, 0x4B), 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(r.adjusted(-1, -1, 1, 1)); // a disagreement with the tensors on disk
        }
        // Layer numbers every 5 layers, and the MTP layer.
        if (i % 5 == 0 || l.kind == LayerKind::Mtp) {
            p.setPen(text);
            p.drawText(QRectF(x - 10, top + h + 4, cell + 20, 16), Qt::AlignHCenter | Qt::AlignTop,
                       QString::number(l.index));
        }
        // An arc from each shared layer back to the full layer it reuses.
        if (l.indexer == IndexerRole::Shared && l.reusesLayer >= 0) {
            const double from = kLeft + l.reusesLayer * step + cell / 2;
            const double to = x + cell / 2;
            QPainterPath path(QPointF(to, top - 2));
            path.cubicTo(QPointF(to, top - 26), QPointF(from, top - 26), QPointF(from, top - 2));
            QColor arc = roleColor(IndexerRole::Full, false);
            arc.setAlpha(110);
            p.setPen(QPen(arc, 1.2));
            p.setBrush(Qt::NoBrush);
            p.drawPath(path);
        }
    }
    // Legend: only the kinds this checkpoint has.
    bool full = false, shared = false, mtp = false, none = false;
    for (const auto &l : m_layers) {
        const bool isMtp = l.kind == LayerKind::Mtp && l.indexer != IndexerRole::None;
        mtp = mtp || isMtp;
        full = full || (!isMtp && l.indexer == IndexerRole::Full);
        shared = shared || (!isMtp && l.indexer == IndexerRole::Shared);
        none = none || l.indexer == IndexerRole::None;
    }
    QList<QPair<QString, QColor>> legend;
    if (full) legend.append({tr("full: owns an indexer"), roleColor(IndexerRole::Full, false)});
    if (shared) legend.append({tr("shared: reuses the last full layer's selection"), roleColor(IndexerRole::Shared, false)});
    if (mtp) legend.append({tr("MTP: its own indexer"), roleColor(IndexerRole::Full, true)});
    if (none) legend.append({tr("no indexer"), roleColor(IndexerRole::None, false)});
    double lx = kLeft;
    p.setFont(font());
    for (const auto &[label, color] : legend) {
        p.setPen(Qt::NoPen);
        p.setBrush(color);
        p.drawRoundedRect(QRectF(lx, 8, 12, 12), 2, 2);
        p.setPen(text);
        const int w = p.fontMetrics().horizontalAdvance(label);
        p.drawText(QPointF(lx + 17, 19), label);
        lx += 17 + w + 22;
    }
}

IndexShareView::IndexShareView(QWidget *parent)
    : AtlasView(parent), m_strip(new IndexStrip(this)), m_summary(new WrapLabel(this)),
      m_mismatches(makeCaption(QString(), this)),
      m_table(makeTable({tr("Layer"), tr("Kind"), tr("Indexer"), tr("Reuses layer"),
                         tr("Indexer tensors on disk"), tr("Parameters")},
                        this))
{
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    v->addWidget(makeHeading(tr("IndexShare: which layers own a DSA indexer"), this));
    v->addWidget(m_summary);
    v->addWidget(m_strip);
    v->addWidget(m_mismatches);
    v->addWidget(m_table, 1);
    // A row picks its layer in every view (Anatomy draws it, Router bias and Routing show it).
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int r, int) {
        if (m_table->item(r, 0)) emit layerSelected(m_table->item(r, 0)->text().toInt());
    });
    connect(m_strip, &IndexStrip::layerClicked, this, [this](int layer) {
        followLayer(layer);
        emit layerSelected(layer);
    });
}

QString IndexShareView::summaryText() const
{
    return m_summary->text();
}

void IndexShareView::followLayer(int layer)
{
    for (int r = 0; r < m_table->rowCount(); ++r)
        if (m_table->item(r, 0) && m_table->item(r, 0)->text().toInt() == layer) {
            QSignalBlocker block(m_table);
            m_table->selectRow(r);
            m_table->scrollToItem(m_table->item(r, 0));
        }
}

void IndexShareView::clearAll()
{
    m_strip->setLayers({});
    m_summary->clear();
    m_mismatches->clear();
    m_table->setRowCount(0);
}

void IndexShareView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    const CheckpointAnalysis &a = data->analysis;
    const IndexShareMap &m = a.indexShare;
    const bool anyIndexer = m.source != IndexShareSource::None || !m.full.empty() ||
                            std::any_of(a.layers.begin(), a.layers.end(), [](const LayerInfo &l) { return l.indexerWeights; });
    setNotApplicable(anyIndexer ? QString()
                                : tr("This model has no sparse-attention (DSA) indexer: every layer attends to every "
                                     "cached token, so no layer owns or shares an index. IndexShare applies to "
                                     "GLM-5.x, DeepSeek-V3.2, DeepSeek-V4's ratio-4 layers, DeepSeek-V4.1, Hy4, "
                                     "MiniMax-M3 and Qwen3.8's sparse layers."));
    m_offsetGiven = data->checkpoint.config.indexSkipTopkOffset.has_value();
    m_strip->setLayers(a.layers);
    QString source;
    if (m.source == IndexShareSource::Pattern)
        source = tr("config.json's <i>index_topk_pattern</i> (first in precedence)");
    else if (m.source == IndexShareSource::IndexerTypes)
        source = tr("config.json's <i>indexer_types</i> (no index_topk_pattern)");
    else if (m.source == IndexShareSource::Formula)
        source = m_offsetGiven
                     ? tr("the formula from <i>index_topk_freq</i> / <i>index_skip_topk_offset</i>")
                     : tr("the formula from <i>index_topk_freq</i>, with the engines' default offset 2");
    else if (m.source == IndexShareSource::EveryLayer && m.full.size() < std::size_t(a.mainLayers))
        source = tr("no IndexShare keys: every sparse-attention layer the schedule names owns its indexer "
                    "(the other kinds have none)");
    else if (m.source == IndexShareSource::EveryLayer)
        source = tr("no IndexShare keys: every layer owns its indexer, as in DeepSeek-V3.2");
    else if (m.source == IndexShareSource::SourceLayers)
        source = tr("config.json's <i>index_source_layer_ids</i> (DeepSeek-V4.1's CSA2: the sparse layers after "
                    "each source reuse its selection)");
    else
        source = tr("no sparse-attention indexer in this model");
    QString text = tr("<b>%1 full</b> and <b>%2 shared</b> of %3 main layers. Map from %4.")
                       .arg(m.full.size())
                       .arg(m.shared.size())
                       .arg(a.mainLayers)
                       .arg(source);
    const CacheBudget &c = data->cache;
    if (c.available && c.indexBytesPerTokenEveryLayer > 0)
        text += tr(" Index keys cost %1 B/token; with every layer indexed they would cost %2 B/token (%3×).")
                    .arg(groupDigitsQ(c.indexBytesPerToken), groupDigitsQ(c.indexBytesPerTokenEveryLayer))
                    .arg(c.indexBytesPerToken
                             ? double(c.indexBytesPerTokenEveryLayer) / double(c.indexBytesPerToken)
                             : 0.0,
                         0, 'f', 1);
    m_summary->setText(text);
    QStringList notes;
    if (!m.atomDiffers.empty()) {
        QStringList layers;
        for (int i : m.atomDiffers)
            layers << QString::number(i);
        notes << tr("ATOM's fallback rule (offset shifted by one) would differ at layers %1.")
                     .arg(layers.join(QStringLiteral(", ")));
    }
    for (const auto &mm : m.mismatches)
        notes << QStringLiteral("<span style='color:%1'>").arg(toneHex(Tone::Bad)) + tr("Disagreement: ") +
                     qs(mm).toHtmlEscaped() + QStringLiteral("</span>");
    m_mismatches->setText(notes.isEmpty() ? tr("The map agrees with the tensors on disk for every layer.")
                                          : notes.join(QStringLiteral("<br>")));
    m_table->setRowCount(int(a.layers.size()));
    for (std::size_t i = 0; i < a.layers.size(); ++i) {
        const LayerInfo &l = a.layers[i];
        const int r = int(i);
        m_table->setItem(r, 0, new QTableWidgetItem(QString::number(l.index)));
        m_table->setItem(r, 1, new QTableWidgetItem(qs(std::string(layerKindName(l.kind)))));
        auto *role = new QTableWidgetItem(qs(std::string(indexerRoleName(l.indexer))));
        // Text in the role's colour; the pale shared green is too faint for text, so it is read darker
        // (lighter on the dark theme).
        QColor roleText = IndexStrip::roleColor(l.indexer, l.kind == LayerKind::Mtp && l.indexer != IndexerRole::None);
        if (l.indexer == IndexerRole::Shared) // the shared green, but quieter than the owner's in both themes
            roleText = darkTheme() ? QColor(0x8F, 0xB5, 0xA3) : roleText.darker(150);
        if (l.indexer == IndexerRole::None) roleText = toneColor(Tone::Muted);
        role->setForeground(roleText);
        m_table->setItem(r, 2, role);
        m_table->setItem(r, 3,
                         new QTableWidgetItem(l.indexer == IndexerRole::Shared && l.reusesLayer >= 0
                                                  ? QString::number(l.reusesLayer)
                                                  : QString()));
        m_table->setItem(r, 4, new QTableWidgetItem(l.indexerWeights ? tr("yes") : tr("no")));
        auto *params = new QTableWidgetItem(groupDigitsQ(l.params.elements));
        params->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(r, 5, params);
    }
}

} // namespace atlas
