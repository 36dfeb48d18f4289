#include "anatomy_view.h"

#include "anatomy_graph.h"
#include "colours.h"
#include "wrap_label.h"

#include <QComboBox>
#include <QEvent>
#include <QApplication>
#include <QHBoxLayout>
#include <QWheelEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QFocusEvent>
#include <QPainterPath>
#include <QResizeEvent>
#include <QScrollArea>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace atlas {

namespace {

QColor kindColor(BoxKind k)
{
    switch (k) {
    case BoxKind::Input:
        return QColor(0x6B, 0x72, 0x80);
    case BoxKind::Linear:
        return QColor(0x3B, 0x7D, 0xC4);
    case BoxKind::Norm:
        return QColor(0x8A, 0x8F, 0x98);
    case BoxKind::Latent:
        return toneColor(Tone::Cached);
    case BoxKind::Heads:
        return QColor(0x2E, 0x9C, 0x9C);
    case BoxKind::Attention:
        return QColor(0x8E, 0x5C, 0xC2);
    case BoxKind::Indexer:
        return toneColor(Tone::IndexerOwner);
    case BoxKind::Router:
        return QColor(0xC9, 0x4B, 0x4B);
    case BoxKind::Experts:
        return QColor(0x3B, 0x7D, 0xC4);
    case BoxKind::Note:
        return QColor(0x8A, 0x8F, 0x98);
    }
    return Qt::gray;
}

QString kindText(LayerKind k)
{
    return k == LayerKind::Dense ? QObject::tr("dense") : k == LayerKind::Moe ? QObject::tr("MoE") : QObject::tr("MTP");
}

QColor attentionColor(LayerAttention a)
{
    switch (a) {
    case LayerAttention::Mla:
        return QColor(0xE0, 0x8A, 0x2E);
    case LayerAttention::Gqa:
        return QColor(0x3B, 0x7D, 0xC4);
    case LayerAttention::Sliding:
        return QColor(0x9C, 0xC3, 0xEA);
    case LayerAttention::Linear:
        return QColor(0x8E, 0x5C, 0xC2);
    case LayerAttention::None:
        return QColor(0xB8, 0xBC, 0xC4);
    case LayerAttention::Compressed:
        return QColor(0x2E, 0x9E, 0x8F);
    }
    return Qt::gray;
}

QString runTitle(const StackRun &r)
{
    const QString span = r.first == r.last ? QObject::tr("Layer %1").arg(r.first)
                                           : QObject::tr("Layers %1–%2").arg(r.first).arg(r.last);
    QStringList kinds; // the attention kinds of the run, in order of first appearance
    for (LayerAttention a : r.attention) {
        const QString name = qs(std::string(layerAttentionName(a)));
        if (!kinds.contains(name)) kinds << name;
    }
    return QStringLiteral("%1 · %2 · %3").arg(span, kindText(r.kind), kinds.join(QStringLiteral(" + ")));
}

void arrowHead(QPainter &p, QPointF tip, double size)
{
    QPainterPath path;
    path.moveTo(tip);
    path.lineTo(tip + QPointF(-size * 0.6, -size));
    path.lineTo(tip + QPointF(size * 0.6, -size));
    path.closeSubpath();
    p.fillPath(path, p.pen().color());
}

void downArrow(QPainter &p, QPointF from, QPointF to)
{
    if (to.y() - from.y() < 4) return;
    p.drawLine(from, to - QPointF(0, 5));
    arrowHead(p, to, 6);
}

constexpr int kCellsPerRow = 20;
constexpr double kCell = 10, kCellGap = 2;

} // namespace

// ---------------------------------------------------------------------------------------------

LayerStackWidget::LayerStackWidget(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(false);
    setMinimumWidth(int(kCellsPerRow * (kCell + kCellGap) + 28));
}

double LayerStackWidget::cell() const
{
    return kCell * m_zoom;
}

double LayerStackWidget::gap() const
{
    return kCellGap * m_zoom;
}

void LayerStackWidget::setZoom(double zoom)
{
    m_zoom = zoom;
    QFont f = parentWidget() ? parentWidget()->font() : QApplication::font();
    f.setPointSizeF(f.pointSizeF() * zoom);
    setFont(f);
    setMinimumWidth(int(kCellsPerRow * (cell() + gap()) + 28 * zoom));
    layout();
    updateGeometry();
    update();
}

void LayerStackWidget::setRuns(std::vector<StackRun> runs)
{
    m_runs = std::move(runs);
    m_indexed = false;
    for (const auto &r : m_runs)
        for (IndexerRole role : r.indexer)
            m_indexed = m_indexed || role != IndexerRole::None;
    layout();
    updateGeometry();
    update();
}

void LayerStackWidget::setSelectedLayer(int layer)
{
    m_selected = layer;
    update();
}

QSize LayerStackWidget::sizeHint() const
{
    return QSize(int(kCellsPerRow * (cell() + gap()) + 28 * m_zoom), std::max(m_height, 200));
}

void LayerStackWidget::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    layout();
}

QStringList LayerStackWidget::legendTexts() const
{
    QStringList out;
    for (const auto &e : m_legend)
        out << e.text;
    return out;
}

namespace {
QFont smallFont(const QFont &f)
{
    QFont s = f;
    s.setPointSizeF(f.pointSizeF() * 0.8);
    return s;
}
// The indexer role's mark inside a cell: a dot owns an indexer, a ring reuses one.
void drawIndexerMark(QPainter &p, const QRectF &cell, int mark, const QColor &ink)
{
    if (mark == 0) return;
    const double r = cell.width() * 0.24;
    p.setPen(mark == 2 ? QPen(ink, 1.2) : Qt::NoPen);
    p.setBrush(mark == 1 ? QBrush(ink) : Qt::NoBrush);
    p.drawEllipse(cell.center(), r, r);
}
} // namespace

void LayerStackWidget::layout()
{
    m_cards.clear();
    m_cells.clear();
    m_rowLabels.clear();
    m_legend.clear();
    const QFontMetricsF fm(font());
    const QFontMetricsF small(smallFont(font()));
    int lastLayer = 0;
    for (const auto &r : m_runs)
        lastLayer = std::max(lastLayer, r.last);
    const double labelW = small.horizontalAdvance(QString::number(lastLayer)) + 5;
    const double w = std::max(120.0, double(width()) - 8);
    const int perRow = std::max(4, int((w - 20 - labelW) / (cell() + gap())));
    double y = 4;
    for (const auto &r : m_runs) {
        const int rows = (r.count() + perRow - 1) / perRow;
        const double h = fm.height() + 10 + rows * (cell() + gap()) + 12;
        const QRectF card(4, y, w, h);
        m_cards.push_back(card);
        for (int i = 0; i < r.count(); ++i) {
            const double cx = card.left() + 10 + labelW + (i % perRow) * (cell() + gap());
            const double cy = card.top() + fm.height() + 12 + (i / perRow) * (cell() + gap());
            m_cells.push_back({r.first + i, QRectF(cx, cy, cell(), cell())});
            if (i % perRow == 0 && r.count() > 1)
                m_rowLabels.push_back({r.first + i, QRectF(card.left() + 6, cy - 2, labelW - 2, cell() + 4)});
        }
        y += h + 8;
    }
    // The legend: the attention kinds shown, then the indexer marks, wrapped to the width.
    std::vector<LayerAttention> kinds;
    for (const auto &r : m_runs)
        for (LayerAttention a : r.attention)
            if (std::find(kinds.begin(), kinds.end(), a) == kinds.end()) kinds.push_back(a);
    for (LayerAttention a : kinds)
        m_legend.push_back({attentionColor(a), 0, qs(std::string(layerAttentionName(a))), {}});
    bool owns = false, reuses = false; // only the marks the stack shows
    for (const auto &r : m_runs)
        for (IndexerRole role : r.indexer)
            owns = owns || role == IndexerRole::Full, reuses = reuses || role == IndexerRole::Shared;
    if (owns) m_legend.push_back({QColor(), 1, tr("owns a DSA indexer"), {}});
    if (reuses) m_legend.push_back({QColor(), 2, tr("reuses one (IndexShare)"), {}});
    double x = 8;
    y += 2;
    for (auto &e : m_legend) {
        const double itemW = cell() + 5 + small.horizontalAdvance(e.text) + 12;
        if (x + itemW > w && x > 8) {
            x = 8;
            y += small.height() + 4;
        }
        e.rect = QRectF(x, y, itemW, small.height());
        x += itemW;
    }
    if (!m_legend.empty()) y += small.height() + 6;
    m_height = int(y);
    setMinimumHeight(m_height);
}

void LayerStackWidget::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QColor text = palette().color(QPalette::WindowText);
    const QColor base = palette().color(QPalette::Base);
    QColor frame = text;
    frame.setAlphaF(0.25);
    QColor muted = text;
    muted.setAlphaF(0.6);
    const QColor ink(0x1B, 0x1F, 0x24, 210); // the indexer marks: dark on every attention colour
    std::size_t cellIndex = 0;
    for (std::size_t i = 0; i < m_runs.size(); ++i) {
        const StackRun &r = m_runs[i];
        const QRectF card = m_cards[i];
        p.setPen(QPen(frame, 1));
        p.setBrush(base);
        p.drawRoundedRect(card, 6, 6);
        QFont bold = font();
        bold.setBold(true);
        p.setFont(bold);
        p.setPen(text);
        const QRectF head = card.adjusted(10, 4, -10, 0);
        p.drawText(head, Qt::AlignLeft | Qt::AlignTop, runTitle(r));
        p.setFont(font());
        if (r.count() > 1) p.drawText(head, Qt::AlignRight | Qt::AlignTop, QStringLiteral("× %1").arg(r.count()));
        for (int k = 0; k < r.count(); ++k, ++cellIndex) {
            const auto &[layer, rect] = m_cells[cellIndex];
            const IndexerRole role = r.indexer[static_cast<std::size_t>(k)];
            p.setPen(Qt::NoPen);
            QColor fill = attentionColor(r.attention[static_cast<std::size_t>(k)]);
            // DeepSeek-V4: the compression shades the cell (ratio 4 deep, 128 light, window only lighter).
            if (r.attention[static_cast<std::size_t>(k)] == LayerAttention::Compressed &&
                static_cast<std::size_t>(k) < r.compression.size()) {
                const std::int64_t ratio = r.compression[static_cast<std::size_t>(k)];
                fill = ratio == 4 ? QColor(0x1F, 0x6F, 0x64) : ratio == 0 ? QColor(0xA9, 0xD8, 0xD0) : QColor(0x4F, 0xB3, 0xA5);
            }
            p.setBrush(fill);
            p.drawRoundedRect(rect, 2, 2);
            drawIndexerMark(p, rect, role == IndexerRole::Full ? 1 : role == IndexerRole::Shared ? 2 : 0, ink);
            if (layer == m_selected) {
                p.setBrush(Qt::NoBrush);
                p.setPen(QPen(text, 2));
                p.drawRoundedRect(rect.adjusted(-2, -2, 2, 2), 3, 3);
            }
        }
    }
    // Layer numbers at the start of each row, and the legend.
    p.setFont(smallFont(font()));
    p.setPen(muted);
    for (const auto &l : m_rowLabels)
        p.drawText(l.rect, Qt::AlignRight | Qt::AlignVCenter, QString::number(l.layer));
    for (const auto &e : m_legend) {
        const QRectF sw(e.rect.left(), e.rect.center().y() - cell() / 2, cell(), cell());
        if (e.mark == 0) {
            p.setPen(Qt::NoPen);
            p.setBrush(e.colour);
            p.drawRoundedRect(sw, 2, 2);
        } else {
            p.setPen(QPen(frame, 1));
            p.setBrush(base);
            p.drawRoundedRect(sw, 2, 2);
            drawIndexerMark(p, sw, e.mark, text);
        }
        p.setPen(text);
        p.drawText(e.rect.adjusted(cell() + 5, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, e.text);
    }
    // The reuse arc of the selected layer, from the full layer whose selection it borrows.
    const QRectF *from = nullptr, *to = nullptr;
    int reuse = -1;
    for (std::size_t i = 0, c = 0; i < m_runs.size(); ++i)
        for (int k = 0; k < m_runs[i].count(); ++k, ++c)
            if (m_cells[c].first == m_selected) reuse = m_runs[i].reuses[static_cast<std::size_t>(k)];
    for (const auto &[layer, rect] : m_cells) {
        if (layer == m_selected) to = &rect;
        if (layer == reuse) from = &rect;
    }
    if (from && to) {
        QPainterPath arc;
        const QPointF a(from->center().x(), from->top() - 1), b(to->center().x(), to->top() - 1);
        arc.moveTo(a);
        arc.cubicTo(a + QPointF(0, -9), b + QPointF(0, -9), b);
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(QColor(0x3A, 0x9E, 0x6E), 1.5));
        p.drawPath(arc);
    }
}

bool LayerStackWidget::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        // A cell says what its layer is: kind, attention, indexer role (and whose selection it reuses).
        auto *help = static_cast<QHelpEvent *>(e);
        for (const auto &[layer, rect] : m_cells)
            if (rect.adjusted(-1, -1, 1, 1).contains(help->pos()))
                for (const StackRun &r : m_runs)
                    if (layer >= r.first && layer <= r.last) {
                        const auto k = std::size_t(layer - r.first);
                        QString tip = tr("Layer %1 · %2 · %3")
                                          .arg(layer)
                                          .arg(qs(std::string(layerKindName(r.kind))),
                                               qs(std::string(layerAttentionName(r.attention[k]))));
                        if (r.indexer[k] == IndexerRole::Full) tip += tr(" · owns a DSA indexer");
                        if (r.indexer[k] == IndexerRole::Shared)
                            tip += r.reuses[k] >= 0 ? tr(" · reuses layer %1's top-k").arg(r.reuses[k])
                                                    : tr(" · reuses an earlier top-k");
                        if (k < r.compression.size() && r.compression[k] > 0)
                            tip += tr(" · a compressed row per %1 tokens").arg(r.compression[k]);
                        QToolTip::showText(help->globalPos(), tip, this);
                        return true;
                    }
        QToolTip::hideText();
        e->ignore();
        return true;
    }
    return QWidget::event(e);
}

void LayerStackWidget::mousePressEvent(QMouseEvent *event)
{
    for (const auto &[layer, rect] : m_cells)
        if (rect.adjusted(-1, -1, 1, 1).contains(event->position())) {
            emit layerClicked(layer);
            return;
        }
    for (std::size_t i = 0; i < m_cards.size(); ++i)
        if (m_cards[i].contains(event->position())) emit layerClicked(m_runs[i].first);
}

// ---------------------------------------------------------------------------------------------

LayerDiagramWidget::LayerDiagramWidget(QWidget *parent) : QWidget(parent)
{
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus); // Tab reaches the blocks; the arrows move between them
    setMinimumSize(480, 320);
}

void LayerDiagramWidget::setAnatomy(LayerAnatomy anatomy)
{
    m_anatomy = std::move(anatomy);
    m_hits.clear();
    m_focused = nullptr;
    fitHeight();
    update();
}

void LayerDiagramWidget::setZoom(double zoom)
{
    m_zoom = zoom;
    QFont f = QApplication::font(this);
    f.setPointSizeF(f.pointSizeF() * zoom);
    setFont(f);
    fitHeight();
    update();
}

int LayerDiagramWidget::readableWidth() const
{
    // About 150 average characters across the page (three columns of blocks): wider, a block holds one line
    // and reads as a bar.
    return int(std::ceil(QFontMetricsF(font()).averageCharWidth() * 150));
}

void LayerDiagramWidget::wheelEvent(QWheelEvent *event)
{
    if (event->modifiers() & Qt::ControlModifier) {
        if (const int d = event->angleDelta().y(); d != 0) emit zoomRequested(d > 0 ? 1 : -1);
        event->accept();
        return;
    }
    QWidget::wheelEvent(event);
}

double LayerDiagramWidget::draw(QPainter *p, double width)
{
    width = std::min(width, double(readableWidth()));
    const QFont normal = font();
    QFont bold = normal;
    bold.setBold(true);
    QFont small = normal;
    small.setPointSizeF(normal.pointSizeF() * 0.88);
    const QFontMetricsF fm(normal), fmSmall(small), fmBold(bold);
    const QColor text = palette().color(QPalette::WindowText);
    QColor muted = text;
    muted.setAlphaF(0.65);
    QColor frame = text;
    frame.setAlphaF(0.18);
    const double margin = 12, colGap = 18, rowGap = 20, pad = 6;
    const double line = fm.height(), smallLine = fmSmall.height();

    // Details and cache notes wrap inside their box (the box grows), so no text is cut.
    auto wrapped = [&](const QFontMetricsF &m, const QString &t, double w) {
        return m.boundingRect(QRectF(0, 0, std::max(w, 40.0), 10000), Qt::TextWordWrap | Qt::AlignLeft, t).height();
    };
    // A box's title and its stored-as line wrap too (a tensor name may break after an underscore).
    auto titleOf = [](const AnatomyBox &b) {
        QString t = qs(b.title) + (b.fromConfig ? QStringLiteral(" †") : QString());
        return t.replace(QLatin1Char('_'), QStringLiteral("_\u200B"));
    };
    auto storedOf = [](const AnatomyBox &b) {
        QString s = qs(b.dtypes);
        if (b.parameters) s += (s.isEmpty() ? QString() : QStringLiteral(" · ")) + shortCountQ(b.parameters);
        return s;
    };
    // The blocks feeding this one from elsewhere than just above (the data graph's edges the page's
    // columns cannot draw): "from q_a_layernorm".
    auto inputsOf = [](const AnatomyBox &b) {
        QStringList names;
        for (const auto &n : b.inputsElsewhere)
            names << qs(n);
        return tr("← from %1").arg(names.join(QStringLiteral(", ")));
    };
    auto boxHeight = [&](const AnatomyBox &b, double w) {
        const double tw = w - 2 * pad - 4;
        double h = pad * 2 + std::max(line, wrapped(fmBold, titleOf(b), tw));
        if (!b.detail.empty()) h += wrapped(fm, qs(b.detail), tw);
        if (!b.dtypes.empty() || b.parameters) h += std::max(smallLine, wrapped(fmSmall, storedOf(b), tw));
        if (!b.cacheNote.empty()) h += wrapped(fmSmall, tr("cached: %1").arg(qs(b.cacheNote)), tw);
        if (!b.inputsElsewhere.empty()) h += wrapped(fmSmall, inputsOf(b), tw);
        return h;
    };
    auto drawBox = [&](const AnatomyBox &b, QRectF r) {
        if (!p) return;
        // A block the layer skips (IndexShare) is greyed and dashed: there, but not run.
        const QColor c = b.skipped ? muted : kindColor(b.kind);
        // The tint mixed with the page's colour, opaque: an SVG renderer that ignores fill-opacity still shows
        // a light block, not a solid dark one (the page is the window's colour; stages have no fill).
        const double a = b.skipped ? 0.05 : b.cached ? 0.30 : 0.12;
        const QColor page = palette().color(QPalette::Window);
        const QColor fill = mixColour(page, c, c.toRgb().alphaF() * a);
        p->setPen(QPen(c, b.cached && !b.skipped ? 2.2 : 1.2,
                       b.kind == BoxKind::Note || b.skipped ? Qt::DashLine : Qt::SolidLine));
        p->setBrush(fill);
        p->drawRoundedRect(r, 5, 5);
        QRectF t = r.adjusted(pad + 2, pad, -pad - 2, 0);
        p->setPen(b.skipped ? muted : text);
        p->setFont(bold);
        const QString title = titleOf(b);
        const double titleH = std::max(line, wrapped(fmBold, title, t.width()));
        p->drawText(QRectF(t.left(), t.top(), t.width(), titleH), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
                    title);
        double y = t.top() + titleH;
        p->setFont(normal);
        if (!b.detail.empty()) {
            const double h = wrapped(fm, qs(b.detail), t.width());
            p->drawText(QRectF(t.left(), y, t.width(), h), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, qs(b.detail));
            y += h;
        }
        p->setFont(small);
        if (!b.dtypes.empty() || b.parameters) {
            p->setPen(muted);
            const QString s = storedOf(b);
            const double h = std::max(smallLine, wrapped(fmSmall, s, t.width()));
            p->drawText(QRectF(t.left(), y, t.width(), h), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, s);
            y += h;
        }
        if (!b.cacheNote.empty()) {
            p->setPen(text); // on the orange fill, the text colour reads in light and dark alike
            const QString note = tr("cached: %1").arg(qs(b.cacheNote));
            const double h = wrapped(fmSmall, note, t.width());
            p->drawText(QRectF(t.left(), y, t.width(), h), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, note);
            y += h;
        }
        if (!b.inputsElsewhere.empty()) {
            QColor accent = kindColor(b.kind);
            p->setPen(b.skipped ? muted : accent.darker(130));
            const QString from = inputsOf(b);
            p->drawText(QRectF(t.left(), y, t.width(), wrapped(fmSmall, from, t.width())),
                        Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, from);
        }
        p->setFont(normal);
    };

    m_hits.clear();
    double y = margin;
    if (p) {
        p->setFont(bold);
        p->setPen(text);
        p->drawText(QRectF(margin, y, width - 2 * margin, line * 1.3), Qt::AlignLeft | Qt::AlignVCenter,
                    qs(m_anatomy.heading));
    }
    y += line * 1.3 + 6;
    const double inner = width - 2 * margin;
    double previousBottom = -1;
    for (const AnatomyStage &stage : m_anatomy.stages) {
        if (previousBottom >= 0) {
            if (p) {
                p->setPen(QPen(muted, 1.4));
                downArrow(*p, QPointF(width / 2, previousBottom), QPointF(width / 2, y));
            }
        }
        const double top = y;
        y += 4;
        if (p) {
            p->setFont(bold);
            p->setPen(muted);
            p->drawText(QRectF(margin + 10, y, inner - 20, line), Qt::AlignLeft | Qt::AlignVCenter, qs(stage.title));
        }
        y += line + 6;
        const int cols = static_cast<int>(stage.columns.size());
        const double colW = cols ? (inner - 20 - (cols - 1) * colGap) / cols : 0;
        double columnsBottom = y;
        std::vector<double> lastBottom(static_cast<std::size_t>(cols), y);
        for (int c = 0; c < cols; ++c) {
            const AnatomyColumn &col = stage.columns[static_cast<std::size_t>(c)];
            const double x = margin + 10 + c * (colW + colGap);
            double cy = y;
            if (p && !col.title.empty()) {
                p->setFont(small);
                p->setPen(muted);
                p->drawText(QRectF(x, cy, colW, smallLine), Qt::AlignHCenter | Qt::AlignVCenter, qs(col.title));
            }
            cy += smallLine + 2;
            for (std::size_t k = 0; k < col.boxes.size(); ++k) {
                const AnatomyBox &b = col.boxes[k];
                const QRectF r(x, cy, colW, boxHeight(b, colW));
                if (k > 0 && p && b.fedFromAbove) { // no arrow where the block above does not feed it
                    p->setPen(QPen(muted, 1.4));
                    downArrow(*p, QPointF(r.center().x(), cy - rowGap), QPointF(r.center().x(), cy));
                }
                drawBox(b, r);
                m_hits.push_back({r, &b});
                cy += r.height() + rowGap;
            }
            lastBottom[static_cast<std::size_t>(c)] = cy - rowGap;
            columnsBottom = std::max(columnsBottom, cy - rowGap);
        }
        y = cols ? columnsBottom + rowGap : y;
        for (std::size_t k = 0; k < stage.join.size(); ++k) {
            const AnatomyBox &b = stage.join[k];
            // An input from another layer comes in from the right, named.
            const double fromW = b.from.empty() ? 0 : std::min(220.0, (inner - 20) * 0.3);
            const QRectF r(margin + 10, y, inner - 20 - fromW, boxHeight(b, inner - 20 - fromW));
            if (p) {
                p->setPen(QPen(muted, 1.4));
                if (k == 0)
                    for (int c = 0; c < cols; ++c) {
                        const AnatomyColumn &col = stage.columns[static_cast<std::size_t>(c)];
                        if (!col.boxes.empty() && col.boxes.back().skipped) continue; // feeds nothing
                        const double cx = margin + 10 + c * (colW + colGap) + colW / 2;
                        downArrow(*p, QPointF(cx, lastBottom[static_cast<std::size_t>(c)]), QPointF(std::min(cx, r.right() - 8), y));
                    }
                else
                    downArrow(*p, QPointF(r.center().x(), y - rowGap), QPointF(r.center().x(), y));
                if (!b.from.empty()) {
                    const QColor accent = kindColor(b.kind);
                    p->setPen(QPen(accent, 1.8));
                    const double ay = r.center().y();
                    p->drawLine(QPointF(r.right() + fromW - 6, ay), QPointF(r.right() + 2, ay));
                    p->setBrush(accent);
                    p->drawPolygon(QPolygonF({QPointF(r.right() + 2, ay), QPointF(r.right() + 10, ay - 4),
                                              QPointF(r.right() + 10, ay + 4)}));
                    p->setFont(small);
                    p->setPen(text);
                    p->drawText(QRectF(r.right() + 12, r.top(), fromW - 18, ay - r.top() - 2),
                                Qt::AlignHCenter | Qt::AlignBottom | Qt::TextWordWrap, tr("from %1").arg(qs(b.from)));
                    p->setFont(normal);
                }
            }
            drawBox(b, r);
            m_hits.push_back({r, &b});
            y += r.height() + rowGap;
        }
        y -= rowGap;
        y += 10;
        if (p) {
            p->setPen(QPen(frame, 1));
            p->setBrush(Qt::NoBrush);
            p->drawRoundedRect(QRectF(margin, top, inner, y - top), 8, 8);
        }
        previousBottom = y;
        y += rowGap;
    }
    // Notes, the legend and what could not be placed.
    QStringList lines;
    for (const auto &n : m_anatomy.notes)
        lines << qs(n);
    lines << tr("Orange: what the cache keeps (per token, or per sequence for a recurrent state); grey dashed: "
                "a step with no weights of its own (a sum, the residual streams), or, faded and marked "
                "\u201cnot run\u201d, a block this layer skips. † a dimension from config.json (no shape holds "
                "it alone).") +
                 (exportingFigure() ? QString() : tr(" Hover a block for its tensors; click it (or Tab to the diagram, arrows, Enter) to list them in Layers."));
    if (!m_anatomy.unplaced.empty())
        lines << tr("Not placed in the diagram: %1 tensor(s), e.g. %2")
                     .arg(m_anatomy.unplaced.size())
                     .arg(qs(m_anatomy.unplaced.front()));
    for (int i = 0; i < lines.size(); ++i) {
        const QRectF r = fmSmall.boundingRect(QRectF(margin, y, width - 2 * margin, 1000),
                                              Qt::TextWordWrap | Qt::AlignLeft, lines[i]);
        if (p) {
            p->setFont(small);
            const bool warn = !m_anatomy.unplaced.empty() && i == lines.size() - 1;
            p->setPen(warn ? QColor(0xC9, 0x4B, 0x4B) : muted);
            p->drawText(QRectF(margin, y, width - 2 * margin, r.height()), Qt::TextWordWrap | Qt::AlignLeft, lines[i]);
        }
        y += r.height() + 2;
    }
    return y + margin;
}

void LayerDiagramWidget::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::TextAntialiasing);
    if (m_anatomy.stages.empty()) {
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(rect(), Qt::AlignCenter, qs(m_anatomy.heading));
        return;
    }
    // One scale for every layer: text at the application's size, never shrunk; a tall layer scrolls.
    draw(&p, width());
    // The block the keyboard is on, ringed in the highlight colour (only while the diagram has focus).
    if (hasFocus() && m_focused && !exportingFigure()) // never in an exported figure
        for (const auto &[r, b] : m_hits)
            if (b == m_focused) {
                p.setPen(QPen(palette().color(QPalette::Highlight), 2.5));
                p.setBrush(Qt::NoBrush);
                p.drawRoundedRect(r.adjusted(-3, -3, 3, 3), 6, 6);
                break;
            }
}

void LayerDiagramWidget::moveFocusBy(int step)
{
    std::vector<const AnatomyBox *> order; // the blocks with tensors, in drawing order
    for (const auto &[r, b] : m_hits)
        if (!b->tensors.empty() && std::find(order.begin(), order.end(), b) == order.end()) order.push_back(b);
    if (order.empty()) return;
    const auto at = std::find(order.begin(), order.end(), m_focused);
    if (at == order.end())
        m_focused = step >= 0 ? order.front() : order.back();
    else
        m_focused = order[std::size_t((std::distance(order.begin(), at) + step + std::ptrdiff_t(order.size())) %
                                      std::ptrdiff_t(order.size()))];
    for (const auto &[r, b] : m_hits)
        if (b == m_focused) {
            // Scrolled into view inside the Anatomy's scroll area.
            for (QWidget *p = parentWidget(); p; p = p->parentWidget())
                if (auto *area = qobject_cast<QScrollArea *>(p)) {
                    area->ensureVisible(int(r.center().x()), int(r.center().y()), int(r.width() / 2) + 8, int(r.height() / 2) + 8);
                    break;
                }
            break;
        }
    update();
}

void LayerDiagramWidget::keyPressEvent(QKeyEvent *event)
{
    switch (event->key()) {
    case Qt::Key_Right:
    case Qt::Key_Down:
        moveFocusBy(1);
        return;
    case Qt::Key_Left:
    case Qt::Key_Up:
        moveFocusBy(-1);
        return;
    case Qt::Key_Return:
    case Qt::Key_Enter:
    case Qt::Key_Space:
        if (m_focused && !m_focused->tensors.empty()) {
            QStringList names;
            for (const auto &t : m_focused->tensors)
                names << qs(t);
            emit boxClicked(names);
            return;
        }
        break;
    default:
        break;
    }
    QWidget::keyPressEvent(event);
}

void LayerDiagramWidget::focusInEvent(QFocusEvent *event)
{
    QWidget::focusInEvent(event);
    if (!m_focused) moveFocusBy(1); // the first block, ringed
    update();
}

void LayerDiagramWidget::focusOutEvent(QFocusEvent *event)
{
    QWidget::focusOutEvent(event);
    update();
}

void LayerDiagramWidget::fitHeight()
{
    const int h = m_anatomy.stages.empty() ? 0 : int(std::ceil(draw(nullptr, std::max(width(), 200))));
    if (h != minimumHeight()) setMinimumHeight(h);
}

void LayerDiagramWidget::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    fitHeight();
}

const AnatomyBox *LayerDiagramWidget::boxAt(QPointF pos) const
{
    for (const auto &[r, b] : m_hits)
        if (r.contains(pos)) return b;
    return nullptr;
}

bool LayerDiagramWidget::event(QEvent *e)
{
    if (e->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(e);
        const AnatomyBox *b = boxAt(help->pos());
        if (!b || b->tensors.empty()) {
            QToolTip::hideText();
            e->ignore();
            return true;
        }
        QString tip = QStringLiteral("<b>%1</b><br>%2").arg(qs(b->title).toHtmlEscaped(), qs(b->detail).toHtmlEscaped());
        tip += tr("<br>%1 parameters · %2 · %3 tensor(s)")
                   .arg(groupDigitsQ(b->parameters), qs(b->dtypes).toHtmlEscaped())
                   .arg(b->tensors.size());
        for (std::size_t i = 0; i < b->tensors.size() && i < 6; ++i)
            tip += QStringLiteral("<br><tt>%1</tt>").arg(qs(b->tensors[i]).toHtmlEscaped());
        if (b->tensors.size() > 6) tip += tr("<br>… and %1 more").arg(b->tensors.size() - 6);
        QToolTip::showText(help->globalPos(), tip, this);
        return true;
    }
    return QWidget::event(e);
}

void LayerDiagramWidget::mousePressEvent(QMouseEvent *event)
{
    const AnatomyBox *b = boxAt(event->position());
    if (!b || b->tensors.empty()) return;
    QStringList names;
    for (const auto &t : b->tensors)
        names << qs(t);
    emit boxClicked(names);
}

// ---------------------------------------------------------------------------------------------

AnatomyView::AnatomyView(QWidget *parent)
    : AtlasView(parent), m_summary(new WrapLabel(this)), m_stack(new LayerStackWidget(this)),
      m_diagram(new LayerDiagramWidget(this)), m_mode(new QComboBox(this))
{
    m_summary->setWordWrap(true);
    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    v->addWidget(makeHeading(tr("Anatomy"), this));
    v->addWidget(m_summary);
    auto *h = new QBoxLayout(QBoxLayout::LeftToRight);
    m_columns = h;
    auto *scroll = new QScrollArea(this);
    m_stackScroll = scroll;
    scroll->setWidget(m_stack);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFixedWidth(m_stack->minimumWidth() + 40);
    h->addWidget(scroll);
    auto *right = new QVBoxLayout();
    m_modeRow = new QWidget(this);
    auto *modeRow = new QHBoxLayout(m_modeRow);
    modeRow->setContentsMargins(0, 0, 0, 0);
    modeRow->addWidget(new QLabel(tr("MLA shown at"), this));
    m_mode->addItem(tr("prefill: K and V expanded per head"), int(AnatomyMode::Prefill));
    m_mode->addItem(tr("decode: kv_b_proj absorbed"), int(AnatomyMode::Decode));
    modeRow->addWidget(m_mode);
    modeRow->addStretch(1);
    right->addWidget(m_modeRow);
    // The diagram keeps one text size for every layer; a layer taller than the window scrolls.
    auto *diagramScroll = new QScrollArea(this);
    diagramScroll->setWidget(m_diagram);
    diagramScroll->setWidgetResizable(true);
    diagramScroll->setFrameShape(QFrame::NoFrame);
    diagramScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    right->addWidget(diagramScroll, 1);
    h->addLayout(right, 1);
    v->addLayout(h, 1);
    connect(m_mode, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { selectLayer(m_layer); });
    connect(m_diagram, &LayerDiagramWidget::zoomRequested, this, &AnatomyView::zoomBy);
    setFocusPolicy(Qt::StrongFocus);
    connect(m_stack, &LayerStackWidget::layerClicked, this, [this](int layer) {
        selectLayer(layer);
        emit layerSelected(layer);
    });
    connect(m_diagram, &LayerDiagramWidget::boxClicked, this, [this](const QStringList &tensors) {
        // The longest common prefix names the block in the Layers filter ("model.layers.5.self_attn.q_a_proj").
        QString prefix = tensors.front();
        for (const QString &t : tensors) {
            int n = 0;
            while (n < prefix.size() && n < t.size() && prefix[n] == t[n])
                ++n;
            prefix.truncate(n);
        }
        if (tensors.size() > 1 && prefix.endsWith(QLatin1Char('.'))) prefix.chop(1);
        emit tensorsChosen(prefix);
    });
    clearAll();
}

void AnatomyView::clearAll()
{
    m_data.reset();
    m_prepared.reset();
    m_stack->setRuns({});
    LayerAnatomy empty;
    empty.heading = tr("Open a checkpoint to see its architecture.").toStdString();
    m_diagram->setAnatomy(empty);
    m_summary->setText(tr("The architecture as the headers describe it: the layer stack on the left, one layer's "
                          "blocks on the right."));
}

int AnatomyView::firstLayer(const std::vector<StackRun> &runs)
{
    // The first MoE layer that owns an indexer says the most; else the first MoE layer.
    for (const auto &r : runs)
        for (int k = 0; k < r.count(); ++k)
            if (r.kind == LayerKind::Moe && r.indexer[static_cast<std::size_t>(k)] == IndexerRole::Full) return r.first + k;
    for (const auto &r : runs)
        if (r.kind == LayerKind::Moe) return r.first;
    return runs.empty() ? 0 : runs.front().first;
}

namespace {

// A layer as the diagram draws it: its blocks, each told what feeds it from elsewhere (its data graph's edges).
LayerAnatomy drawnLayer(const LoadedCheckpoint &data, int layer, const TensorsByLayer *index, AnatomyMode mode)
{
    LayerAnatomy anatomy = layerAnatomy(data, layer, index, mode);
    annotateInputs(anatomy, anatomyGraph(data, anatomy, layer));
    return anatomy;
}

} // namespace

std::shared_ptr<const PreparedView> AnatomyView::prepare(const LoadedCheckpoint &data) const
{
    auto p = std::make_shared<PreparedAnatomy>();
    p->runs = layerStack(data);
    p->index = tensorsByLayer(data);
    p->first = firstLayer(p->runs);
    for (const AnatomyMode mode : {AnatomyMode::Prefill, AnatomyMode::Decode})
        p->firstDrawn[int(mode)] = drawnLayer(data, p->first, &p->index, mode);
    return p;
}

void AnatomyView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    setCheckpoint(std::move(data), nullptr);
}

void AnatomyView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                                std::shared_ptr<const PreparedView> prepared)
{
    m_data = std::move(data);
    m_prepared = std::dynamic_pointer_cast<const PreparedAnatomy>(prepared);
    if (!m_prepared) m_prepared = std::static_pointer_cast<const PreparedAnatomy>(prepare(*m_data));
    const std::vector<StackRun> &runs = m_prepared->runs;
    const int pick = m_prepared->first;
    m_stack->setRuns(runs);
    m_summary->setText(
        (m_stack->showsIndexerRoles()
             ? tr("%1 layers in %2 run(s). A cell per layer, coloured by its attention (legend below the stack); a dot "
                  "marks a layer that owns a DSA indexer, a ring one that reuses another's (IndexShare)%3. Click a layer "
                  "(or step with the arrow keys).")
                   .arg(QStringLiteral("%1"), QStringLiteral("%2"),
                        m_data->checkpoint.config.compressRatios.empty()
                            ? QString()
                            : tr("; compressed attention darker the more compressed rows it keeps, window only light"))
             : tr("%1 layers in %2 run(s). A cell per layer, coloured by its attention (legend below the stack; "
                  "compressed attention darker the more compressed rows it keeps). Click a layer (or step with the arrow keys)."))
            .arg(m_data->analysis.layerCount)
            .arg(runs.size()));
    // Exported figures leave the interaction hint out.
    m_summary->setProperty("exportText", QString(m_summary->text()).remove(tr(" Click a layer (or step with the arrow keys).")));
    selectLayer(pick);
}

void AnatomyView::selectLayer(int layer)
{
    if (!m_data) return;
    m_layer = layer;
    m_stack->setSelectedLayer(layer);
    const int mode = m_mode->currentData().toInt();
    // The layer shown first was drawn with the rest of the open, off this thread.
    m_diagram->setAnatomy(m_prepared && layer == m_prepared->first && (mode == 0 || mode == 1)
                              ? m_prepared->firstDrawn[mode]
                              : drawnLayer(*m_data, layer, m_prepared ? &m_prepared->index : nullptr, AnatomyMode(mode)));
    // The prefill / decode switch only means something on an MLA layer.
    const auto &stages = m_diagram->anatomy().stages;
    m_modeRow->setVisible(std::any_of(stages.begin(), stages.end(),
                                      [](const AnatomyStage &st) { return st.title.starts_with("MLA"); }));
}

void AnatomyView::setMode(AnatomyMode mode)
{
    m_mode->setCurrentIndex(m_mode->findData(int(mode)));
}

void AnatomyView::setZoom(double zoom)
{
    zoom = std::clamp(zoom, 0.6, 2.5);
    if (std::abs(zoom - m_zoom) < 1e-9) return;
    m_zoom = zoom;
    m_stack->setZoom(zoom);
    m_diagram->setZoom(zoom);
    arrange();
}

void AnatomyView::zoomBy(int steps)
{
    setZoom(std::round(m_zoom * std::pow(1.15, steps) * 100) / 100);
}

bool AnatomyView::stacked() const
{
    return m_columns->direction() == QBoxLayout::TopToBottom;
}

// Beside the diagram when both fit (the diagram at least its minimum width), else above it at full width:
// a narrow window or a document column keeps every block's text whole.
void AnatomyView::arrange()
{
    const int stackWidth = m_stack->minimumWidth() + 40;
    const int room = width() - 40; // the view's margins
    const bool narrow = room < stackWidth + m_columns->spacing() + m_diagram->minimumWidth() + 20;
    const bool changed = narrow != stacked();
    if (narrow) {
        m_columns->setDirection(QBoxLayout::TopToBottom);
        m_stackScroll->setMinimumWidth(0);
        m_stackScroll->setMaximumWidth(QWIDGETSIZE_MAX);
        m_stackScroll->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    } else {
        m_columns->setDirection(QBoxLayout::LeftToRight);
        m_stackScroll->setFixedWidth(stackWidth);
        m_stackScroll->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Expanding);
    }
    m_stackScroll->updateGeometry();
    if (changed && layout()) layout()->activate(); // now, not when the event loop next runs (a figure paints at once)
}

void AnatomyView::resizeEvent(QResizeEvent *event)
{
    AtlasView::resizeEvent(event);
    arrange();
}

void AnatomyView::keyPressEvent(QKeyEvent *event)
{
    // The arrow keys step through the layers.
    const int step = event->key() == Qt::Key_Right || event->key() == Qt::Key_Down  ? 1
                     : event->key() == Qt::Key_Left || event->key() == Qt::Key_Up ? -1
                                                                                   : 0;
    if (step && m_data && m_layer + step >= 0 && m_layer + step < m_data->analysis.layerCount) {
        selectLayer(m_layer + step);
        emit layerSelected(m_layer);
        return;
    }
    AtlasView::keyPressEvent(event);
}

} // namespace atlas
