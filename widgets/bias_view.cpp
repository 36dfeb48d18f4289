#include "bias_view.h"

#include <QFrame>
#include <QGridLayout>
#include <QPainter>

#include "bf16.h"
#include "chart_widget.h"
#include "colours.h"
#include "reflow_grid.h"
#include "text_cell_delegate.h"
#include "wrap_label.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace atlas {

namespace {

// The zero-logit column: a track over 0..K with the tie range drawn as a bar and the lower-index
// count as a dot, beside the numbers.
class TieRangeDelegate final : public atlas::TextCellDelegate
{
public:
    using TextCellDelegate::TextCellDelegate;
    enum Role { Min = Qt::UserRole + 1, Max, Replaced, TopK };
    void paint(QPainter *p, const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        TextCellDelegate::paint(p, option, index); // background, selection and the text
        if (!index.data(Min).isValid()) return;
        const int lo = index.data(Min).toInt(), hi = index.data(Max).toInt(), at = index.data(Replaced).toInt();
        const int k = std::max(1, index.data(TopK).toInt());
        const QRectF r = QRectF(option.rect).adjusted(8, option.rect.height() * 0.35, -option.rect.width() * 0.45,
                                                      -option.rect.height() * 0.35);
        if (r.width() < 20) return;
        p->save();
        p->setRenderHint(QPainter::Antialiasing);
        auto x = [&](int v) { return r.left() + r.width() * v / k; };
        QColor track = option.palette.color(QPalette::Text);
        track.setAlphaF(0.2);
        p->setPen(Qt::NoPen);
        p->setBrush(track);
        p->drawRoundedRect(r, r.height() / 2, r.height() / 2);
        p->setBrush(QColor(0xE0, 0x8A, 0x2E));
        p->drawRoundedRect(QRectF(x(lo), r.top(), std::max(2.0, x(hi) - x(lo)), r.height()), r.height() / 2,
                           r.height() / 2);
        p->setBrush(option.palette.color(QPalette::Text));
        p->drawEllipse(QPointF(x(at), r.center().y()), r.height() * 0.7, r.height() * 0.7);
        p->restore();
    }
};

QFrame *summaryCard(QWidget *parent, QLabel **value, const QString &name)
{
    auto *frame = new QFrame(parent);
    frame->setFrameShape(QFrame::StyledPanel);
    auto *v = new QVBoxLayout(frame);
    v->setContentsMargins(10, 6, 10, 6);
    v->setSpacing(2);
    v->addWidget(makeCaption(name, frame));
    *value = new WrapLabel(QStringLiteral("—"), frame);
    QFont f = (*value)->font();
    f.setWeight(QFont::DemiBold);
    f.setPointSizeF(f.pointSizeF() * 1.2);
    (*value)->setFont(f);
    (*value)->setTextInteractionFlags(Qt::TextSelectableByMouse);
    (*value)->setWordWrap(true);
    frame->setMinimumWidth(120);
    v->addWidget(*value);
    v->addStretch(1);
    return frame;
}

} // namespace

QString BiasView::summaryValue(const QString &name) const
{
    for (const auto &[n, label] : m_summary)
        if (n == name) return label->text();
    return {};
}

BiasView::BiasView(QWidget *parent)
    : AtlasView(parent), m_heading(makeHeading(tr("Router bias"), this)), m_status(new WrapLabel(this)),
      m_body(new QWidget(this)), m_layer(new QComboBox(this)),
      m_layerSummary(new WrapLabel(this)), m_histogram(new ChartWidget(this)), m_levels(new ChartWidget(this)),
      m_table(makeTable({tr("Layer"), tr("Dtype"), tr("Min"), tr("Max"), tr("Spread"), tr("Stored distinct"),
                         tr("BF16 distinct"), tr("Zero-logit (ties)")},
                        this))
{
    m_table->setItemDelegateForColumn(7, new TieRangeDelegate(m_table));
    m_status->setWordWrap(true);
    m_layerSummary->setWordWrap(true);
    m_histogram->setTitle(tr("FP32 values and the BF16 levels they collapse onto"));
    m_levels->setTitle(tr("Distinct values per layer: FP32 as stored vs after BF16 rounding"));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);

    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    v->addWidget(m_heading);
    v->addWidget(m_status);
    v->addWidget(m_body, 1);
    v = new QVBoxLayout(m_body);
    v->setContentsMargins(0, 0, 0, 0);
    // The checkpoint-wide table of the reference article, computed.
    auto *cards = new ReflowGrid(8, m_body); // one row on a wide window, two or more on a narrow one
    const QStringList names = {tr("Tensors"), tr("Values per tensor"), tr("Bytes read"), tr("In BF16"),
                               tr("Median distinct stored → BF16"), tr("BF16 levels per layer"),
                               tr("Layers losing levels"), tr("Changed at zero logits")};
    for (int i = 0; i < names.size(); ++i) {
        QLabel *value = nullptr;
        cards->addCell(summaryCard(m_body, &value, names[i]));
        m_summary.append({names[i], value});
    }
    v->addWidget(cards);
    auto *row = new QHBoxLayout();
    row->addWidget(new QLabel(tr("Layer"), this));
    row->addWidget(m_layer);
    row->addWidget(m_layerSummary, 1);
    v->addLayout(row);
    auto *split = new QSplitter(Qt::Vertical, this);
    auto *charts = new QSplitter(Qt::Horizontal, split);
    charts->addWidget(m_histogram);
    charts->addWidget(m_levels);
    split->addWidget(charts);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    v->addWidget(split, 1);

    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, &BiasView::showLayer);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int r, int) {
        m_layer->setCurrentIndex(r);
        emit layerSelected(m_layer->currentData().toInt());
    });
    connect(m_layer, qOverload<int>(&QComboBox::activated), this,
            [this](int) { emit layerSelected(m_layer->currentData().toInt()); });
    clearAll();
}

QString BiasView::statusText() const
{
    return m_status->text();
}

// The dtypes the biases are stored in ("F32", "BF16", "F32 and BF16").
QString BiasView::storedDtypes(const std::vector<BiasStats> &stats)
{
    QStringList out;
    for (const auto &s : stats)
        if (!out.contains(qs(s.dtype))) out << qs(s.dtype);
    return out.isEmpty() ? tr("FP32") : out.join(tr(" and "));
}

void BiasView::clearAll()
{
    m_audit.reset();
    m_layer->clear();
    m_histogram->clear();
    m_levels->clear();
    m_table->setRowCount(0);
    m_layerSummary->clear();
    m_heading->setText(tr("Router bias"));
    m_body->setVisible(true);
    m_status->setText(tr("Open a checkpoint: its router biases are read after the layout, byte-exact."));
}

void BiasView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint>)
{
    clearAll();
    setNotApplicable({});
    m_status->setText(tr("Reading the router biases…"));
}

QString BiasView::selectedLayerText() const
{
    return m_layer->currentText();
}

void BiasView::selectLayer(int layer)
{
    for (int i = 0; i < m_layer->count(); ++i)
        if (m_layer->itemData(i).toInt() == layer) m_layer->setCurrentIndex(i);
}

void BiasView::setBiases(std::shared_ptr<const BiasAudit> audit)
{
    m_audit = std::move(audit);
    const auto &stats = m_audit->stats;
    const bool gguf = !stats.empty() && stats.front().tensor.starts_with("blk.");
    m_heading->setText(m_audit->kind == BiasUse::Correction ? (gguf ? tr("Router correction bias (exp_probs_b, llama.cpp's name for e_score_correction_bias)")
                                                                    : tr("Router correction bias (e_score_correction_bias)"))
                       : m_audit->kind == BiasUse::Logit
                           ? tr("Router bias (the router's linear bias: part of the logits)")
                           : tr("Router bias"));
    m_body->setVisible(!stats.empty());
    if (stats.empty()) {
        const QString why = tr("The routers of this checkpoint have no bias (neither an e_score_correction_bias nor "
                               "a linear bias): there is nothing to round. The Routing view still shows what BF16 "
                               "logits do.");
        m_status->setText(why);
        setNotApplicable(why);
        return;
    }
    setNotApplicable({});
    const BiasSummary sum = summarizeBiases(stats, m_audit->kind);
    const QString values[] = {
        tr("%1 (layers %2–%3)").arg(sum.tensors).arg(sum.firstLayer).arg(sum.lastLayer),
        sum.valuesPerTensor ? groupDigitsQ(*sum.valuesPerTensor) : tr("varying"),
        groupDigitsQ(sum.bytesRead) + tr(" B"),
        groupDigitsQ(sum.bf16Bytes) + tr(" B"),
        QStringLiteral("%1 → %2").arg(sum.medianFp32Distinct, 0, 'g', 6).arg(sum.medianBf16Distinct, 0, 'g', 6),
        QStringLiteral("%1–%2").arg(sum.minBf16Distinct).arg(sum.maxBf16Distinct),
        tr("%1 of %2").arg(sum.layersLosingLevels).arg(sum.tensors),
        tr("%1 (%2–%3 over tie orders)")
            .arg(sum.layersChangedAtZeroLogits)
            .arg(sum.layersChangedAtZeroLogitsMin)
            .arg(sum.layersChangedAtZeroLogitsMax)};
    for (int i = 0; i < m_summary.size(); ++i)
        m_summary[i].second->setText(sum.tensors ? values[i] : QStringLiteral("—"));
    std::uint32_t fpMin = UINT32_MAX, fpMax = 0, bfMin = UINT32_MAX, bfMax = 0;
    for (const auto &s : stats) {
        fpMin = std::min(fpMin, s.fp32Distinct);
        fpMax = std::max(fpMax, s.fp32Distinct);
        bfMin = std::min(bfMin, s.bf16Distinct);
        bfMax = std::max(bfMax, s.bf16Distinct);
    }
    m_status->setText(
        tr("%1 tensors, %2 bytes read (exactly the tensors, no more). Distinct values: %3–%4 as stored (%7), "
           "%5–%6 after BF16 round-to-nearest-even.")
            .arg(stats.size())
            .arg(groupDigitsQ(m_audit->bytesRead))
            .arg(fpMin)
            .arg(fpMax)
            .arg(bfMin)
            .arg(bfMax)
            .arg(storedDtypes(stats)) +
        [&] {
            // Stored in 16 bits (a quantised copy that converted them, or a checkpoint that ships them so): the
            // FP32 values are gone before any runtime reads them.
            int sixteen = 0;
            for (const auto &s : stats)
                sixteen += s.dtype == "BF16" || s.dtype == "F16";
            return sixteen ? tr(" STORED IN 16 BITS: %1 of %2 in the file itself; the values were rounded before "
                                "any runtime reads them.")
                                 .arg(sixteen)
                                 .arg(stats.size())
                           : QString();
        }());
    QStringList labels;
    BarSeries fp32{tr("%1 distinct (as stored)").arg(storedDtypes(stats)), {}, ChartWidget::seriesColor(0)};
    BarSeries bf16{tr("BF16 distinct"), {}, ChartWidget::seriesColor(1)};
    m_table->setRowCount(int(stats.size()));
    {
        QSignalBlocker block(m_layer);
        m_layer->clear();
        for (std::size_t i = 0; i < stats.size(); ++i) {
            const BiasStats &s = stats[i];
            m_layer->addItem(s.layer >= 0 ? tr("layer %1").arg(s.layer) : qs(s.tensor), s.layer);
            labels << QString::number(s.layer);
            fp32.values << s.fp32Distinct;
            bf16.values << s.bf16Distinct;
            const int r = int(i);
            auto cell = [&](int c, const QString &text) {
                auto *item = new QTableWidgetItem(text);
                if (c >= 2) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                m_table->setItem(r, c, item);
            };
            cell(0, QString::number(s.layer));
            cell(1, qs(s.dtype));
            cell(2, s.min ? QString::number(double(*s.min), 'f', 6) : QStringLiteral("—"));
            cell(3, s.max ? QString::number(double(*s.max), 'f', 6) : QStringLiteral("—"));
            cell(4, s.min && s.max ? QString::number(double(*s.max - *s.min), 'f', 6) : QStringLiteral("—"));
            cell(5, QString::number(s.fp32Distinct));
            cell(6, QString::number(s.bf16Distinct));
            cell(7, !s.zeroLogitReplaced ? QStringLiteral("—")
                    : s.zeroLogitMin && s.zeroLogitMax
                        ? QStringLiteral("%1 (%2–%3)").arg(*s.zeroLogitReplaced).arg(*s.zeroLogitMin).arg(*s.zeroLogitMax)
                        : QString::number(*s.zeroLogitReplaced));
            if (s.zeroLogitReplaced && s.zeroLogitMin && s.zeroLogitMax && m_audit->router) {
                auto *item = m_table->item(r, 7);
                item->setData(TieRangeDelegate::Min, *s.zeroLogitMin);
                item->setData(TieRangeDelegate::Max, *s.zeroLogitMax);
                item->setData(TieRangeDelegate::Replaced, *s.zeroLogitReplaced);
                item->setData(TieRangeDelegate::TopK, m_audit->router->topk);
            }
            m_table->item(r, 0)->setToolTip(tr("SHA-256 %1").arg(qs(s.sha256)));
        }
    }
    // A log axis only when the counts span an order of magnitude; equal counts read best on a linear one.
    const bool spread = fpMax > 0 && std::min(fpMin, bfMin) > 0 && fpMax >= 10 * std::min(fpMin, bfMin);
    const QString stored = storedDtypes(stats);
    if (stored == QLatin1String("BF16")) { // one series: stored and rounded are the same values
        m_levels->setTitle(tr("Distinct values per layer, stored as BF16 (rounding changes none)"));
        m_levels->showBars(labels, {BarSeries{tr("BF16 distinct (as stored)"), bf16.values, ChartWidget::seriesColor(0)}},
                           tr("distinct values"), spread);
    } else {
        m_levels->setTitle(tr("Distinct values per layer: as stored (%1) vs after BF16 rounding").arg(stored));
        m_levels->showBars(labels, {fp32, bf16}, tr("distinct values"), spread);
    }
    m_layer->setCurrentIndex(0);
    showLayer();
}

void BiasView::showLayer()
{
    const int i = m_layer->currentIndex();
    if (!m_audit || i < 0 || i >= int(m_audit->stats.size())) return;
    const BiasStats &s = m_audit->stats[std::size_t(i)];
    QString note;
    if (s.nanCount || s.infCount)
        note =
            tr(" <span style='color:%3'>%1 NaN and %2 infinite values are left out of the plot.</span>")
                .arg(s.nanCount)
                .arg(s.infCount)
                .arg(toneHex(Tone::Bad));
    m_layerSummary->setText(
        tr("%1 values, %2 distinct as stored (%7) → <b>%3 BF16 levels</b>; zero-logit probe: %4 of the "
           "top-k replaced%5.%6")
            .arg(s.values.size())
            .arg(s.fp32Distinct)
            .arg(s.bf16Distinct)
            .arg(s.zeroLogitReplaced ? QString::number(*s.zeroLogitReplaced) : tr("n/a"))
            .arg(s.zeroLogitMin && s.zeroLogitMax
                     ? tr(" with ties to the lower index; %1 to %2 by other tie orders").arg(*s.zeroLogitMin).arg(*s.zeroLogitMax)
                     : QString())
            .arg(note)
            .arg(qs(s.dtype)));
    if (!s.min || !s.max) {
        m_histogram->clear();
        return;
    }
    // A fine histogram of the FP32 values, wide enough to show every level's neighbourhood.
    double lo = *s.min, hi = *s.max;
    for (const auto &l : s.levels)
        if (std::isfinite(l.value)) {
            lo = std::min(lo, double(l.value));
            hi = std::max(hi, double(l.value));
        }
    const int bins = 160;
    const double width = (hi - lo) > 0 ? (hi - lo) / bins : 1.0;
    const QString dtype = qs(s.dtype);
    m_histogram->setTitle(s.dtype == "BF16" ? tr("BF16 values as stored: already on BF16 levels, rounding moves none")
                                            : tr("%1 values as stored and the BF16 levels they collapse onto").arg(dtype));
    LineSeries hist{tr("%1 values per bin").arg(dtype), {}, {}, ChartWidget::seriesColor(0), false, true};
    QVector<double> counts(bins + 1, 0.0);
    for (float v : s.values)
        if (std::isfinite(v)) counts[std::clamp(int((double(v) - lo) / width), 0, bins)] += 1;
    for (int b = 0; b <= bins; ++b) {
        hist.x << lo + (b + 0.5) * width;
        hist.y << counts[b];
    }
    m_histogram->showLines({hist}, tr("bias value"), tr("count (values per bin)"), false, false);
    if (s.dtype == "BF16") return; // every bar already stands on a BF16 level: no lines to add
    QVector<double> levels;
    for (const auto &l : s.levels)
        if (std::isfinite(l.value)) levels << double(l.value);
    m_histogram->addMarkers(levels, tr("BF16 levels (%1)").arg(levels.size()), ChartWidget::seriesColor(3));
}

} // namespace atlas
