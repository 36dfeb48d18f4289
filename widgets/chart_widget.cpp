#include "chart_widget.h"

#include "atlas_view.h"

#include <QCoreApplication>
#include <QLabel>
#include <QPointer>
#include <QMouseEvent>
#include <QToolTip>

#include <QEvent>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace atlas {

namespace {

// 725 B, 1.9 B, 965 K, 12: a value beside a dot or on a log axis, short enough not to collide.
QString compactNumber(double v)
{
    static const struct
    {
        double scale;
        const char *suffix;
    } steps[] = {{1e12, " T"}, {1e9, " B"}, {1e6, " M"}, {1e3, " K"}};
    for (const auto &step : steps)
        if (std::fabs(v) >= step.scale)
            return QString::number(v / step.scale, 'g', 3) + QLatin1String(step.suffix);
    return QString::number(v, 'g', 4);
}

// Log-axis ticks in one style from bottom to top (100 K, 1 M, 10 M … 1 T), not plain numbers that turn
// into powers of ten half-way up.
class CompactLogTicker final : public QCPAxisTickerLog
{
protected:
    QString getTickLabel(double tick, const QLocale &, QChar, int) override { return compactNumber(tick); }
};

bool g_vectorOutput = false;

// A QCustomPlot that draws once per turn of the event loop, whatever asked (new data, the palette, a resize),
// and not at all while it is hidden (a chart showing its empty message). QCustomPlot itself replots at once in
// every resize, at each size the layout passes through: a chart shown for the first time drew three times,
// each time into a freshly allocated window-wide pixmap.
class Plot final : public QCustomPlot
{
public:
    using QCustomPlot::QCustomPlot;

    // Makes the paint buffer for a plot of `size` now, while nothing is drawn into it: a buffer is a fresh
    // pixmap, and its first use costs the page faults of every byte (on this project's CI machines 5-10 us a
    // page: 4-8 ms for a chart across the window). False when the buffer was already of that size.
    bool prepareBuffers(const QSize &size)
    {
        if (size.isEmpty() || bufferSize() == size) return false;
        setViewport(QRect(QPoint(0, 0), size));
        releaseStaleBuffers();
        setupPaintBuffers();
        return true;
    }

    QSize bufferSize() const { return mPaintBuffers.isEmpty() ? QSize() : mPaintBuffers.first()->size(); }

    // Asks for one replot after the events queued now; a paint that comes first draws it then.
    void schedule()
    {
        if (m_pending) return;
        m_pending = true;
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (m_pending && !isHidden()) draw();
            },
            Qt::QueuedConnection);
    }

protected:
    void resizeEvent(QResizeEvent *) override
    {
        setViewport(rect());
        schedule();
    }
    void paintEvent(QPaintEvent *event) override
    {
        if (m_pending) draw(); // the buffers are drawn before they are shown, never stale
        QCustomPlot::paintEvent(event);
    }

private:
    // A buffer of another size than the plot's is let go before its successor is made (QCustomPlot makes the
    // new pixmap first), so that the successor can take its memory, already paged in, not fresh pages.
    void releaseStaleBuffers()
    {
        if (bufferSize() != viewport().size()) mPaintBuffers.clear();
    }

    void draw()
    {
        m_pending = false;
        releaseStaleBuffers();
        replot(QCustomPlot::rpQueuedRefresh); // into the buffers now; the widget repaints with the next update
    }

    bool m_pending = false;
};

void styleAxis(QCPAxis *axis, const QPalette &pal)
{
    const QColor text = pal.color(QPalette::WindowText);
    QColor grid = text;
    grid.setAlpha(40);
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    axis->grid()->setSubGridVisible(false);
}

} // namespace

ChartWidget::ChartWidget(QWidget *parent) : QWidget(parent), m_plot(new Plot(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    // Data and fills smooth; axes, grid and labels are straight lines that antialiasing only blurs and
    // slows (a full-window replot was 11-13 ms with every element antialiased).
    m_plot->setAntialiasedElements(QCP::aePlottables | QCP::aeFills | QCP::aeItems | QCP::aeLegendItems |
                                   QCP::aeScatters);
    m_plot->setNotAntialiasedElements(QCP::aeAxes | QCP::aeGrid | QCP::aeSubGrid | QCP::aeZeroLine);
    m_plot->setPlottingHints(QCP::phCacheLabels | QCP::phFastPolylines);
    // One paint buffer, not two: the overlay layer holds only QCustomPlot's selection rectangle, which no chart
    // here uses. A buffer is a fresh window-wide pixmap, allocated and cleared the first time a chart shows.
    m_plot->layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmLogical);
    // The legend sits in a row of its own under the plot, laid out horizontally: it never hides data.
    auto *legendRow = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, legendRow);
    legendRow->setMargins(QMargins(5, 0, 5, 5));
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    legendRow->addElement(0, 0, m_plot->legend);
    m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    m_plot->legend->setWrap(6);
    m_plot->plotLayout()->setRowStretchFactor(1, 0.001);
    m_plot->legend->setVisible(true);
    m_plot->setMinimumHeight(180);
    m_plot->setMinimumWidth(240); // not the title's width: a long title wraps (fitLegend)
    m_plot->setMouseTracking(true); // every bar and point reads out on hover
    m_plot->installEventFilter(this);
    applyPalette();
}

void ChartWidget::replot()
{
    static_cast<Plot *>(m_plot)->schedule();
}

void ChartWidget::setVectorOutput(bool on)
{
    g_vectorOutput = on;
}

bool ChartWidget::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_plot && event->type() == QEvent::Resize) fitLegend(); // the plot replots on every resize
    if (watched == m_plot && event->type() == QEvent::MouseMove) {
        const auto *me = static_cast<QMouseEvent *>(event);
        const QPointF pos = me->position();
        if (m_plot->axisRect()->rect().contains(pos.toPoint())) {
            const QString text = hoverText(m_plot->xAxis->pixelToCoord(pos.x()));
            if (!text.isEmpty()) QToolTip::showText(me->globalPosition().toPoint(), text, m_plot);
        } else {
            QToolTip::hideText();
        }
    }
    if (watched == m_plot && event->type() == QEvent::MouseButtonPress) {
        const auto *me = static_cast<QMouseEvent *>(event);
        const QPointF pos = me->position();
        if (me->button() == Qt::LeftButton && m_plot->axisRect()->rect().contains(pos.toPoint()))
            emit clicked(m_plot->xAxis->pixelToCoord(pos.x()), m_plot->yAxis->pixelToCoord(pos.y()));
    }
    if (watched == m_plot && event->type() == QEvent::Resize && m_sideLabelStart > 0) fitSideLabels();
    if (watched == m_plot && event->type() == QEvent::Paint && g_vectorOutput) {
        // The painter is redirected to the export device: draw the plot's items, not its pixmaps.
        QCPPainter painter(m_plot);
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNoCaching);
        m_plot->toPainter(&painter, m_plot->width(), m_plot->height());
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

// The x axis of a single stack reaches far enough right that its widest part label fits at the plot's
// width now: with the axis from -0.6 to u and the labels from s, (u - s) / (u + 0.6) of the axis' pixels
// must hold the label, so u = (s W + 0.6 a) / (W - a) for a label a pixels wide on a W-pixel axis.
void ChartWidget::fitSideLabels()
{
    const double lower = -0.6, normal = m_labels.size() - 0.4;
    // The axis' width at the plot's size now (its margins as last laid out: a resize has not re-laid it out yet).
    QCPAxisRect *rect = m_plot->axisRect();
    const int besides = rect->width() > 0 ? m_plot->viewport().width() - rect->width() : 80; // axis labels, margins
    const double w = m_plot->width() - besides, a = m_sideLabelPx;
    double upper = normal;
    if (w > a + 20) upper = std::max(normal, (m_sideLabelStart * w - lower * a) / (w - a));
    if (std::abs(m_plot->xAxis->range().upper - upper) > 1e-9) {
        m_plot->xAxis->setRange(lower, upper);
        replot();
    }
}

ChartWidget::~ChartWidget() = default;

QColor ChartWidget::seriesColor(int index)
{
    // Readable on light and dark backgrounds, and apart for colour-blind readers.
    // Twelve, so that a chart of every parameter category never repeats a colour.
    static const QColor colors[] = {QColor(0x3B, 0x82, 0xC4), QColor(0xE0, 0x8A, 0x2E), QColor(0x3F, 0xA3, 0x6B),
                                    QColor(0xC9, 0x4B, 0x4B), QColor(0x8E, 0x6C, 0xC2), QColor(0x8C, 0x8C, 0x8C),
                                    QColor(0x2A, 0xA9, 0xB5), QColor(0xC8, 0xA2, 0x1E), QColor(0xD4, 0x6F, 0xB0),
                                    QColor(0x8B, 0x5A, 0x2B), QColor(0x1F, 0x3F, 0x7A), QColor(0x7D, 0x8F, 0x2E)};
    return colors[index % 12];
}

void ChartWidget::setTitle(const QString &title)
{
    m_title = title;
    if (m_titleElement) {
        m_titleElement->setText(title);
        fitLegend();
    } else {
        m_plot->plotLayout()->insertRow(0);
        m_titleElement = new QCPTextElement(m_plot, title,
                                            QFont(font().family(), font().pointSize() + 1, QFont::DemiBold));
        m_plot->plotLayout()->addElement(0, 0, m_titleElement);
    }
    applyPalette();
}

// A value printed above (or below) a point, allowed past the plot's edge into the title's margin (the
// highest one may need it), and listed among the chart's point labels.
QCPItemText *ChartWidget::addValueText(double x, double y, const QString &text, bool above, int gap)
{
    auto *item = new QCPItemText(m_plot);
    item->setClipToAxisRect(false);
    item->position->setCoords(x, y);
    item->setPositionAlignment(Qt::AlignHCenter | (above ? Qt::AlignBottom : Qt::AlignTop));
    item->setPadding(above ? QMargins(0, 0, 0, gap) : QMargins(0, gap, 0, 0));
    item->setText(text);
    item->setColor(palette().color(QPalette::WindowText));
    m_pointLabels << text;
    return item;
}

QStringList ChartWidget::titleLines() const
{
    return m_titleElement ? m_titleElement->text().split(QLatin1Char('\n')) : QStringList();
}

void ChartWidget::setValueFormat(std::function<QString(double)> format)
{
    m_valueFormat = std::move(format);
}

void ChartWidget::setEmptyMessage(const QString &message)
{
    m_emptyMessage = message;
    if (!m_empty) {
        m_empty = makeCaption(QString(), this); // muted, wrapped, as every caption
        m_empty->setAlignment(Qt::AlignCenter);
        m_empty->setMargin(24);
        m_empty->setMinimumHeight(180);
        layout()->addWidget(m_empty);
        m_empty->hide();
    }
    m_empty->setText(message);
    if (isEmpty()) showPlot(message.isEmpty());
}

namespace {

QList<QPointer<ChartWidget>> g_unprepared; // charts whose plot waits for its buffer, in the order they came

} // namespace

void ChartWidget::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    queuePrepare();
}

void ChartWidget::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    queuePrepare();
}

void ChartWidget::queuePrepare()
{
    if (!m_plot->isHidden() || g_vectorOutput || g_unprepared.contains(this)) return;
    g_unprepared.append(this);
    if (g_unprepared.size() == 1)
        QMetaObject::invokeMethod(QCoreApplication::instance(), [] { prepareNext(); }, Qt::QueuedConnection);
}

void ChartWidget::prepareNext()
{
    while (!g_unprepared.isEmpty())
        if (const QPointer<ChartWidget> chart = g_unprepared.takeFirst(); chart && chart->prepareBuffer()) break;
    if (!g_unprepared.isEmpty())
        QMetaObject::invokeMethod(QCoreApplication::instance(), [] { prepareNext(); }, Qt::QueuedConnection);
}

bool ChartWidget::prepareBuffer()
{
    // Shown, the plot takes the whole of this widget (no margins; the empty message hides as it shows).
    if (!m_plot->isHidden() || !isVisible() || g_vectorOutput) return false;
    return static_cast<Plot *>(m_plot)->prepareBuffers(contentsRect().size());
}

QSize ChartWidget::paintBufferSize() const
{
    return static_cast<const Plot *>(m_plot)->bufferSize();
}

void ChartWidget::showPlot(bool plot)
{
    m_plot->setVisible(plot);
    if (m_empty) m_empty->setVisible(!plot && !m_emptyMessage.isEmpty());
}

void ChartWidget::clear()
{
    m_sideLabelStart = 0;
    m_sideLabelPx = 0;
    m_pointLabels.clear();
    m_levels.clear();
    showPlot(m_emptyMessage.isEmpty());
    m_labels.clear();
    m_markers.clear();
    m_plot->clearPlottables();
    m_plot->clearItems();
    replot(); // coalesced, in an event of its own
}

void ChartWidget::showBars(const QStringList &labels, const QList<BarSeries> &series,
                           const QString &valueLabel, bool logValues, bool stacked)
{
    stacked = stacked && !logValues; // a stack on a log axis would misstate every part above the first
    m_sideLabelStart = 0;
    m_sideLabelPx = 0;
    m_pointLabels.clear();
    m_levels.clear();
    showPlot(true);
    m_labels = labels;
    m_plot->xAxis->grid()->setZeroLinePen(Qt::NoPen); // category 0 is not a zero worth a solid line
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_markers.clear();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    // Many categories (a bar per layer or per expert): a label every 5, 10, 16, 32 … so that about a dozen
    // stay, and never run together.
    int every = 1;
    if (labels.size() > 30)
        for (int step : {5, 10, 16, 20, 25, 32, 50, 64, 100, 128, 256, 500, 1000})
            if ((every = step) * 14 >= labels.size()) break;
    // A few long labels (a layer kind, a pipeline stage) break onto two lines rather than run together.
    const bool wrapLabels = labels.size() > 1 && labels.size() <= 6;
    for (int i = 0; i < labels.size(); ++i) {
        QString label = i % every == 0 || every == 1 ? labels[i] : QString();
        if (wrapLabels && label.size() > 10) {
            int best = -1;
            for (int c = 0; c < label.size(); ++c)
                if (label[c] == QLatin1Char(' ') && (best < 0 || std::abs(c - label.size() / 2) < std::abs(best - label.size() / 2)))
                    best = c;
            if (best > 0) label[best] = QLatin1Char('\n');
        }
        if (every > 1 && label.isEmpty()) continue; // a tick per labelled category only, not a comb of 256
        ticker->addTick(i, label);
    }
    m_plot->xAxis->setTicker(ticker);
    m_plot->xAxis->setTickLabelRotation(labels.size() > 6 && labels.size() <= 30 ? 35 : 0);
    m_plot->xAxis->setRange(-0.6, labels.size() - 0.4);
    m_plot->xAxis->setLabel(QString());
    m_plot->yAxis->setLabel(valueLabel);
    // A log axis labels its ticks compactly (CompactLogTicker); a linear one in plain numbers.
    m_plot->yAxis->setScaleType(logValues ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_plot->yAxis->setTicker(logValues ? QSharedPointer<QCPAxisTicker>(QSharedPointer<CompactLogTicker>::create())
                                       : QSharedPointer<QCPAxisTicker>::create());
    m_plot->yAxis->setNumberFormat(QStringLiteral("gb"));
    m_plot->yAxis->setNumberPrecision(6);
    QCPBarsGroup *group = stacked ? nullptr : new QCPBarsGroup(m_plot);
    if (group) group->setSpacing(2);
    const double width = stacked ? 0.6 : 0.8 / std::max<qsizetype>(1, series.size());
    double lo = INFINITY, hi = 0;
    for (const auto &s : series)
        for (double v : s.values)
            if (!logValues || v > 0) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    if (stacked)
        for (int i = 0; i < labels.size(); ++i) {
            double sum = 0;
            for (const auto &s : series)
                sum += i < s.values.size() ? s.values[i] : 0.0;
            hi = std::max(hi, sum);
        }
    // On a log axis a bar's length says nothing (it starts at an arbitrary power of ten): each value is a
    // dot at its height instead, the series side by side in a category, and with few dots their values
    // are printed beside them.
    if (logValues) {
        const int n = int(series.size());
        const bool printValues = labels.size() * n <= 24;
        for (int k = 0; k < n; ++k) {
            const BarSeries &s = series[k];
            auto *dots = m_plot->addGraph();
            dots->setName(s.name);
            dots->setLineStyle(QCPGraph::lsNone);
            dots->setPen(QPen(s.color, 2));
            dots->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, s.color, s.color, 10));
            const double offset = n > 1 ? (k - (n - 1) / 2.0) * std::min(0.3, 0.8 / n) : 0.0;
            QVector<double> keys, values;
            for (int i = 0; i < s.values.size(); ++i) {
                if (s.values[i] <= 0) continue;
                keys << i + offset;
                values << s.values[i];
                if (!printValues) continue;
                // The first series' values above its dots, the next below theirs: side by side they
                // would run together in a narrow category.
                QCPItemText *text = addValueText(i + offset, s.values[i], compactNumber(s.values[i]), k % 2 == 0, 8);
                QFont f = font();
                f.setPointSizeF(f.pointSizeF() * 0.85);
                text->setFont(f);
            }
            dots->setData(keys, values, true);
        }
        if (hi > 0) // room above the highest dot for its printed value
            m_plot->yAxis->setRange(std::pow(10.0, std::floor(std::log10(lo)) - (printValues && n > 1 ? 0.5 : 0.0)),
                                    std::pow(10.0, std::log10(hi) + 0.9));
        m_plot->legend->setVisible(series.size() > 1);
        fitLegend();
        applyPalette();
        replot();
        return;
    }
    QCPBars *below = nullptr;
    for (const auto &s : series) {
        auto *bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
        bars->setName(s.name);
        bars->setWidth(width);
        if (group) bars->setBarsGroup(group);
        if (stacked && below) bars->moveAbove(below);
        below = bars;
        bars->setPen(Qt::NoPen);
        bars->setBrush(s.color);
        QVector<double> keys, values;
        for (int i = 0; i < s.values.size(); ++i) {
            if (stacked && s.values[i] <= 0) continue; // nothing to draw, not even a hairline
            keys << i;
            values << s.values[i];
        }
        bars->setData(keys, values, true);
    }
    // A stack's total printed above it when there are few: a part too thin to see still counts in it.
    if (stacked && m_valueFormat && labels.size() <= 12)
        for (int i = 0; i < labels.size(); ++i) {
            double sum = 0;
            for (const auto &s : series)
                sum += i < s.values.size() ? std::max(0.0, s.values[i]) : 0.0;
            addValueText(i, sum, m_valueFormat(sum), true, 4);
        }
    // One stack: each part's value beside it (right of the bar, at the part's middle, pushed apart so that
    // thin parts at the bottom stay legible): a printed figure needs no hovering.
    // Several stacks have their totals above them and the legend for the parts: values beside them would
    // run into the next stack's (the Cache view's parts on GLM-5.3-Flash), so only a single stack has them.
    if (stacked && m_valueFormat && labels.size() == 1 && hi > 0) {
        // A line of text apart on the axis as it is drawn now (at least 8 % of it): a short chart would
        // otherwise print thin parts' labels over each other.
        const double axisPx = std::max(60, m_plot->axisRect()->height());
        const double minGap = std::max(hi * 0.08, (QFontMetricsF(font()).height() + 2) * hi * 1.25 / axisPx);
        for (int i = 0; i < labels.size(); ++i) {
            std::vector<std::pair<double, QString>> parts; // (y, text), bottom up
            double base = 0;
            for (const auto &s : series) {
                const double v = i < s.values.size() ? std::max(0.0, s.values[i]) : 0.0;
                if (v > 0) parts.push_back({base + v / 2, s.name + QStringLiteral(": ") + m_valueFormat(v)});
                base += v;
            }
            double floor = minGap * 0.5; // clear of the axis
            m_sideLabelStart = i + width / 2 + 0.02;
            for (const auto &part : parts)
                m_sideLabelPx = std::max(m_sideLabelPx, QFontMetrics(font()).horizontalAdvance(part.second) + 10);
            for (auto &[y, text] : parts) {
                y = std::max(y, floor);
                floor = y + minGap;
                auto *item = new QCPItemText(m_plot);
                item->position->setCoords(i + width / 2 + 0.02, y);
                item->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
                item->setText(text);
                item->setColor(palette().color(QPalette::WindowText));
                m_pointLabels << text;
            }
        }
    }
    if (hi > 0) m_plot->yAxis->setRange(0, hi * (stacked && m_valueFormat ? 1.25 : 1.12)); // room for printed totals
    if (m_sideLabelStart > 0) fitSideLabels();
    m_plot->legend->setVisible(series.size() > 1);
    fitLegend();
    applyPalette();
    replot(); // coalesced, in an event of its own
}

namespace {

// Series that draw the same line are drawn once, named together: "KV + index = MLA latent only: 11,660 B/token"
// (one legend entry, not three that read alike with two lines hidden under the first).
QList<LineSeries> mergeIdentical(const QList<LineSeries> &series)
{
    QList<LineSeries> out;
    for (const LineSeries &s : series) {
        LineSeries *same = nullptr;
        for (LineSeries &o : out)
            if (!s.bars && !o.bars && o.x == s.x && o.y == s.y) same = &o;
        if (!same) {
            out << s;
            continue;
        }
        const qsizetype a = same->name.lastIndexOf(QStringLiteral(": ")), b = s.name.lastIndexOf(QStringLiteral(": "));
        if (a > 0 && b > 0 && same->name.mid(a) == s.name.mid(b))
            same->name = same->name.left(a) + QStringLiteral(" = ") + s.name.left(b) + same->name.mid(a);
        else
            same->name += QStringLiteral(" = ") + s.name;
    }
    return out;
}

} // namespace

void ChartWidget::showLines(const QList<LineSeries> &input, const QString &xLabel, const QString &yLabel,
                            bool logX, bool logY)
{
    const QList<LineSeries> series = mergeIdentical(input);
    m_pointLabels.clear();
    m_levels.clear();
    showPlot(true);
    m_labels.clear();
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_markers.clear();
    for (auto *axis : {m_plot->xAxis, m_plot->yAxis}) {
        const bool log = axis == m_plot->xAxis ? logX : logY;
        axis->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (log)
            axis->setTicker(QSharedPointer<CompactLogTicker>::create());
        else
            axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        axis->setNumberFormat(QStringLiteral("gb"));
        axis->setNumberPrecision(6);
        axis->setTickLabelRotation(0);
    }
    m_plot->xAxis->setLabel(xLabel);
    m_plot->yAxis->setLabel(yLabel);
    for (const auto &s : series) {
        if (s.bars) {
            auto *bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
            bars->setName(s.name);
            double width = 1;
            if (s.x.size() > 1) width = (s.x.back() - s.x.front()) / (s.x.size() - 1) * 0.9;
            bars->setWidth(width);
            bars->setPen(Qt::NoPen);
            bars->setBrush(s.color);
            bars->setData(s.x, s.y);
            continue;
        }
        auto *graph = m_plot->addGraph();
        graph->setName(s.name);
        // A dashed line wider than a pixel takes the raster engine's dash stroker: the Routing view's three
        // pale dashed variants held the GUI thread 39 ms (bench_gui, Simulate); at 1 px they are 12 ms.
        graph->setPen(QPen(s.color, s.dashed ? std::min(s.width, 1.0) : s.width, s.dashed ? Qt::DashLine : Qt::SolidLine));
        graph->setData(s.x, s.y);
    }
    // Layers and experts are whole numbers: no tick between them.
    bool whole = !logX;
    for (const auto &s : series)
        for (double x : s.x)
            whole = whole && x == std::floor(x);
    if (whole) {
        auto fixed = QSharedPointer<QCPAxisTickerFixed>::create();
        fixed->setTickStep(1.0);
        fixed->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        m_plot->xAxis->setTicker(fixed);
    }
    m_plot->rescaleAxes();
    if (!logY) {
        QCPRange r = m_plot->yAxis->range();
        m_plot->yAxis->setRange(std::min(0.0, r.lower),
                                r.upper + (r.upper - std::min(0.0, r.lower)) * 0.1 + 1e-12);
    } else {
        QCPRange r = m_plot->yAxis->range();
        m_plot->yAxis->setRange(r.lower / 1.5, r.upper * 2.5);
    }
    if (logX) { // room after the last decade, so its label is not cut at the edge
        const QCPRange r = m_plot->xAxis->range();
        m_plot->xAxis->setRange(r.lower, r.upper * 1.35);
    }
    m_plot->legend->setVisible(series.size() > 1);
    fitLegend();
    applyPalette();
    replot(); // coalesced, in an event of its own
}

void ChartWidget::fitLegend()
{
    // The title wraps onto further lines when the chart is narrower than it, instead of holding the
    // chart wide.
    if (m_titleElement) {
        const QFontMetrics fm(m_titleElement->font());
        const int room = std::max(80, m_plot->width() - 16);
        QString text;
        QString line;
        for (const QString &word : m_title.split(QLatin1Char(' '))) {
            const QString wider = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(wider) > room) {
                text += line + QLatin1Char('\n');
                line = word;
            } else
                line = wider;
        }
        text += line;
        if (m_titleElement->text() != text) m_titleElement->setText(text);
    }
    // As many legend columns as names fit side by side, so that none is cut.
    int longest = 0;
    for (int i = 0; i < m_plot->legend->itemCount(); ++i)
        if (auto *item = qobject_cast<QCPPlottableLegendItem *>(m_plot->legend->item(i)))
            longest = std::max(longest, int(QFontMetrics(item->font()).horizontalAdvance(item->plottable()->name())));
    const int column = longest + 60; // the icon, its gap and the spacing
    const int wrap = std::clamp(m_plot->width() / std::max(column, 1), 1, 6);
    if (wrap != m_plot->legend->wrap()) {
        m_plot->legend->setWrap(wrap);
        m_plot->legend->setFillOrder(QCPLegend::foColumnsFirst, true); // a new wrap moves only what is added next
    }
}

void ChartWidget::addMarkers(const QVector<double> &x, const QString &name, const QColor &color)
{
    // One legend entry (a graph without data) and a vertical line per value; lines work on log axes too.
    auto *legendOnly = m_plot->addGraph();
    legendOnly->setName(name);
    legendOnly->setPen(QPen(color, 2));
    const double y1 = m_plot->yAxis->scaleType() == QCPAxis::stLogarithmic ? 1.0 : 0.0;
    QCPRange xr = m_plot->xAxis->range();
    for (double v : x) {
        auto *line = new QCPItemStraightLine(m_plot);
        line->setPen(QPen(color, 1.6));
        line->point1->setCoords(v, y1);
        line->point2->setCoords(v, y1 + 1.0);
        xr.expand(v);
    }
    m_markers[name] = int(x.size());
    fitLegend();
    if (m_plot->xAxis->scaleType() == QCPAxis::stLinear) {
        const double pad = (xr.upper - xr.lower) * 0.04 + 1e-6;
        m_plot->xAxis->setRange(xr.lower - pad, xr.upper + pad);
    }
    m_plot->legend->setVisible(true);
    replot(); // coalesced, in an event of its own
}

void ChartWidget::setXRange(double lo, double hi)
{
    m_plot->xAxis->setRange(lo, hi);
    replot();
}

void ChartWidget::addLevel(double y, const QString &name, const QColor &color, bool dashed)
{
    // A horizontal line across the plot with a legend entry of its own (a graph without data).
    auto *legendOnly = m_plot->addGraph();
    legendOnly->setName(name);
    QPen pen(color, 1.6);
    if (dashed) {
        pen.setStyle(Qt::DashLine);
        pen.setWidthF(1.0); // the raster dash stroker is slow at wider pens (bench_gui)
    }
    legendOnly->setPen(pen);
    auto *line = new QCPItemStraightLine(m_plot);
    line->setPen(pen);
    line->point1->setCoords(0, y);
    line->point2->setCoords(1, y);
    m_levels << name;
    QCPRange yr = m_plot->yAxis->range();
    if (y * 1.08 > yr.upper) m_plot->yAxis->setRange(yr.lower, y * 1.08);
    fitLegend();
    m_plot->legend->setVisible(true);
    replot();
}

void ChartWidget::addPointLabel(double x, double y, const QString &text, const QColor &color, Qt::Alignment align)
{
    auto *point = m_plot->addGraph();
    point->setData({x}, {y});
    point->setLineStyle(QCPGraph::lsNone);
    point->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, 9));
    point->removeFromLegend();
    point->setName(QString()); // not a series
    auto *label = new QCPItemText(m_plot);
    label->position->setCoords(x, y);
    label->setPositionAlignment(align);
    label->setPadding(QMargins(6, 2, 6, 2));
    label->setText(text);
    QFont f = font();
    f.setWeight(QFont::DemiBold);
    label->setFont(f);
    label->setColor(palette().color(QPalette::WindowText));
    QColor fill = palette().color(QPalette::Base);
    fill.setAlpha(220);
    label->setBrush(fill);
    label->setPen(QPen(color, 1));
    m_pointLabels << text;
    replot();
}

QStringList ChartWidget::pointLabels() const
{
    return m_pointLabels;
}

void ChartWidget::setHoverFormat(std::function<QString(double, double)> format)
{
    m_hoverFormat = std::move(format);
}

QString ChartWidget::hoverText(double x) const
{
    QStringList lines;
    // Bars: the category under the pointer, every series' value in it.
    for (int i = 0; i < m_plot->plottableCount(); ++i) {
        auto *bars = qobject_cast<QCPBars *>(m_plot->plottable(i));
        if (!bars || bars->name().isEmpty() || bars->dataCount() == 0) continue;
        const double key = std::round(x);
        auto it = bars->data()->findBegin(key, false);
        if (it == bars->data()->constEnd() || std::fabs(it->key - key) > 0.5) continue;
        const QString category =
            key >= 0 && key < m_labels.size() ? m_labels[int(key)] : QString::number(key, 'g', 6);
        if (lines.isEmpty()) lines << QStringLiteral("<b>%1</b>").arg(category.toHtmlEscaped());
        lines << QStringLiteral("<span style='color:%1'>■</span> %2: %3")
                     .arg(bars->brush().color().name(), bars->name().toHtmlEscaped(),
                          m_hoverFormat ? m_hoverFormat(it->key, it->value) : QString::number(it->value, 'g', 6));
    }
    for (int i = 0; i < m_plot->graphCount(); ++i) {
        QCPGraph *g = m_plot->graph(i);
        if (g->name().isEmpty() || g->dataCount() == 0) continue;
        if (!m_labels.isEmpty()) { // dots by category: the category under the pointer
            const double key = std::round(x);
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
                if (std::round(it->key) == key) {
                    const QString category = key >= 0 && key < m_labels.size() ? m_labels[int(key)] : QString();
                    if (lines.isEmpty()) lines << QStringLiteral("<b>%1</b>").arg(category.toHtmlEscaped());
                    lines << QStringLiteral("<span style='color:%1'>■</span> %2: %3")
                                 .arg(g->pen().color().name(), g->name().toHtmlEscaped(),
                                      m_hoverFormat ? m_hoverFormat(key, it->value) : QString::number(it->value, 'g', 6));
                }
            continue;
        }
        // The data point nearest x (data are sorted by key).
        auto it = g->data()->findBegin(x, true);
        if (it == g->data()->constEnd()) continue;
        auto best = it;
        if (++it != g->data()->constEnd() && std::fabs(it->key - x) < std::fabs(best->key - x)) best = it;
        lines << QStringLiteral("<span style='color:%1'>■</span> %2: %3")
                     .arg(g->pen().color().name(), g->name().toHtmlEscaped(),
                          m_hoverFormat ? m_hoverFormat(best->key, best->value)
                                        : QStringLiteral("%1 at %2").arg(QString::number(best->value, 'g', 6),
                                                                         QString::number(best->key, 'g', 6)));
    }
    return lines.join(QStringLiteral("<br>"));
}

QStringList ChartWidget::seriesNames() const
{
    QStringList names;
    for (int i = 0; i < m_plot->plottableCount(); ++i)
        if (!m_plot->plottable(i)->name().isEmpty()) names << m_plot->plottable(i)->name(); // not labelled points
    return names;
}

int ChartWidget::pointCount(const QString &series) const
{
    for (int i = 0; i < m_plot->plottableCount(); ++i) {
        QCPAbstractPlottable *p = m_plot->plottable(i);
        if (p->name() != series) continue;
        if (m_markers.contains(series)) return m_markers.value(series);
        if (auto *g = qobject_cast<QCPGraph *>(p)) return g->dataCount();
        if (auto *b = qobject_cast<QCPBars *>(p)) return b->dataCount();
    }
    return -1;
}

bool ChartWidget::isEmpty() const
{
    return m_plot->plottableCount() == 0;
}

void ChartWidget::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange) applyPalette();
    QWidget::changeEvent(event);
}

void ChartWidget::applyPalette()
{
    const QPalette pal = palette();
    m_plot->setBackground(pal.color(QPalette::Base));
    m_plot->axisRect()->setBackground(pal.color(QPalette::Base));
    for (auto *axis : {m_plot->xAxis, m_plot->yAxis, m_plot->xAxis2, m_plot->yAxis2})
        styleAxis(axis, pal);
    m_plot->legend->setBrush(pal.color(QPalette::Base));
    m_plot->legend->setTextColor(pal.color(QPalette::WindowText));
    m_plot->legend->setBorderPen(QPen(pal.color(QPalette::Mid)));
    m_plot->legend->setBorderPen(Qt::NoPen);
    if (m_titleElement) m_titleElement->setTextColor(pal.color(QPalette::WindowText));
    replot(); // coalesced, in an event of its own
}

} // namespace atlas
