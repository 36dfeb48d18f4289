#include "view_export.h"

#include "atlas_view.h"

#include <QLabel>
#include <algorithm>
#include <vector>

#include "chart_widget.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QImage>
#include <QLayout>
#include <QPointer>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTreeView>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QFile>
#include <QSvgGenerator>

#include <cmath>
#include <QWidget>

namespace atlas {

namespace {

constexpr int kCaptionHeight = 26;

// While alive, the view is laid out at the height its scrolling parts need to show everything (every
// table row, the whole page of a scroll area) with their vertical scroll bars off: a figure shows what
// scrolls, not the window's slice of it. Only the view's own layout is redone (its ancestors' pending
// layout requests see the restored sizes), so the window around it does not move.
class FullHeight
{
public:
    explicit FullHeight(QWidget *view) : m_view(view), m_size(view->size())
    {
        for (QSplitter *s : view->findChildren<QSplitter *>())
            m_splitters.push_back({s, s->sizes()});
        // Tables first: a scroll area's page grows with the tables in it.
        for (QTableView *t : view->findChildren<QTableView *>()) {
            if (!t->isVisibleTo(view)) continue;
            const QHeaderView *header = t->horizontalHeader();
            int full = t->verticalHeader()->length() + 2 * t->frameWidth() +
                       (header->isVisibleTo(t) ? std::max(header->height(), header->sizeHint().height()) : 0) + 2;
            if (t->horizontalScrollBar()->isVisibleTo(t)) full += t->horizontalScrollBar()->sizeHint().height();
            grow(t, full);
        }
        // A tree: the rows as they are expanded now (a layer list, or what the user opened).
        for (QTreeView *t : view->findChildren<QTreeView *>()) {
            if (!t->isVisibleTo(view)) continue;
            const auto policy = t->sizeAdjustPolicy();
            t->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
            const int full = t->sizeHint().height();
            t->setSizeAdjustPolicy(policy);
            grow(t, full);
        }
        for (QScrollArea *s : view->findChildren<QScrollArea *>()) {
            if (!s->isVisibleTo(view) || !s->widget()) continue;
            QWidget *page = s->widget();
            if (page->layout()) page->layout()->activate();
            int full = std::max(page->minimumSizeHint().height(), page->sizeHint().height());
            full = std::max(full, page->minimumHeight()) + 2 * s->frameWidth();
            if (s->horizontalScrollBar()->isVisibleTo(s)) full += s->horizontalScrollBar()->sizeHint().height();
            grow(s, full);
        }
        if (m_saved.empty()) return;
        // Everything else keeps its size: the view grows by what its outermost scrolling parts grow.
        int extra = 0;
        for (const Saved &s : m_saved) {
            bool inner = false;
            for (const Saved &o : m_saved)
                inner = inner || (o.area != s.area && o.area->isAncestorOf(s.area));
            if (!inner) extra += s.area->minimumHeight() - s.height;
        }
        relayout(view);
        const int height = std::max(view->height() + extra, view->minimumSizeHint().height());
        view->resize(view->width(), height);
        relayout(view);
        // A splitter gives new room by its stretch factors (a chart could grow thousands of pixels): the
        // grown part gets what it needs, the others keep their sizes.
        for (auto &[splitter, sizes] : m_splitters) {
            if (!splitter || splitter->orientation() != Qt::Vertical) continue;
            QList<int> want = sizes;
            bool grown = false;
            for (int i = 0; i < splitter->count() && i < want.size(); ++i)
                for (const Saved &g : m_saved)
                    if (g.area && (splitter->widget(i) == g.area || splitter->widget(i)->isAncestorOf(g.area))) {
                        want[i] += g.area->minimumHeight() - g.height;
                        grown = true;
                    }
            if (grown) splitter->setSizes(want);
        }
        relayout(view);
    }
    ~FullHeight()
    {
        if (m_saved.empty()) return;
        for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it) {
            if (!it->area) continue;
            it->area->setMinimumHeight(it->minimumHeight);
            it->area->setVerticalScrollBarPolicy(it->policy);
        }
        relayout(m_view);
        m_view->resize(m_size);
        for (auto &[splitter, sizes] : m_splitters)
            if (splitter) splitter->setSizes(sizes);
        relayout(m_view);
    }
    FullHeight(const FullHeight &) = delete;
    FullHeight &operator=(const FullHeight &) = delete;

private:
    // Lays the view's insides out again now, innermost first: splitters and layouts would otherwise only
    // see changed minimum sizes when the event loop next runs.
    static void relayout(QWidget *view)
    {
        const QList<QWidget *> inside = view->findChildren<QWidget *>(); // parents before their children
        for (auto it = inside.rbegin(); it != inside.rend(); ++it) {
            if (auto *splitter = qobject_cast<QSplitter *>(*it)) splitter->refresh();
            if (QLayout *l = (*it)->layout()) {
                l->invalidate();
                l->activate();
            }
        }
        if (QLayout *l = view->layout()) {
            l->invalidate();
            l->activate();
        }
    }
    void grow(QAbstractScrollArea *area, int full)
    {
        // Past a few screens a figure is no longer read whole (and a PNG at twice the size grows to
        // hundreds of megabytes): such a view is shown as the window shows it.
        constexpr int kMostExtra = 6000;
        if (full <= area->height() || full - area->height() > kMostExtra) return;
        m_saved.push_back({area, area->minimumHeight(), area->height(), area->verticalScrollBarPolicy()});
        area->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        area->setMinimumHeight(full);
    }
    struct Saved
    {
        QPointer<QAbstractScrollArea> area;
        int minimumHeight;
        int height; // before
        Qt::ScrollBarPolicy policy;
    };
    QWidget *m_view;
    QSize m_size;
    std::vector<Saved> m_saved;
    std::vector<std::pair<QPointer<QSplitter>, QList<int>>> m_splitters; // their sizes before
};

// The widget, then the caption in a strip of its own below it.
void paintFigure(QPainter &p, QWidget *widget, const QString &caption)
{
    // A figure is read, not clicked: labels with an "exportText" show it instead, and painted hints go.
    std::vector<std::pair<QLabel *, QString>> swapped;
    for (QLabel *label : widget->findChildren<QLabel *>())
        if (const QVariant t = label->property("exportText"); t.isValid()) {
            swapped.emplace_back(label, label->text());
            label->setText(t.toString());
        }
    setExportingFigure(true);
    widget->render(&p, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
    setExportingFigure(false);
    for (auto &[label, text] : swapped)
        label->setText(text);
    if (caption.isEmpty()) return;
    const QRect strip(0, widget->height(), widget->width(), kCaptionHeight);
    p.fillRect(strip, widget->palette().color(QPalette::Window));
    QColor text = widget->palette().color(QPalette::WindowText);
    text.setAlphaF(0.7);
    p.setPen(text);
    QFont f = widget->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    p.setFont(f);
    p.drawText(strip.adjusted(20, 0, -20, 0), Qt::AlignLeft | Qt::AlignVCenter,
               QFontMetrics(f).elidedText(caption, Qt::ElideMiddle, strip.width() - 40));
}

} // namespace

bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const FullHeight fullHeight(widget);
    const QSize size = widget->size() + QSize(0, caption.isEmpty() ? 0 : kCaptionHeight);
    auto fail = [&](const QString &why) {
        if (error) *error = why;
        return false;
    };
    if (suffix == QLatin1String("png")) {
        QImage image(size * 2, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(2.0);
        image.fill(widget->palette().color(QPalette::Window));
        QPainter p(&image);
        paintFigure(p, widget, caption);
        p.end();
        // Its real density (twice 96 dpi: pHYs), so a word processor places it at the window's size, and
        // its provenance as PNG text (tEXt).
        const int dotsPerMeter = int(std::lround(2 * 96 / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.setText(QStringLiteral("Software"), QStringLiteral("Checkpoint Atlas"));
        if (!widget->windowTitle().isEmpty()) image.setText(QStringLiteral("Title"), widget->windowTitle());
        if (!caption.isEmpty()) image.setText(QStringLiteral("Source"), caption);
        if (!image.save(path, "PNG")) return fail(QStringLiteral("%1: cannot write the PNG file").arg(path));
        return true;
    }
    // Charts draw as vectors into SVG and PDF, and switch back to raster afterwards.
    struct VectorCharts
    {
        explicit VectorCharts(bool on) { ChartWidget::setVectorOutput(on); }
        ~VectorCharts() { ChartWidget::setVectorOutput(false); }
    } vector(suffix == QLatin1String("svg") || suffix == QLatin1String("pdf"));
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(size);
        svg.setViewBox(QRect(QPoint(), size));
        svg.setTitle(widget->windowTitle());
        svg.setDescription(caption.isEmpty() ? QStringLiteral("Checkpoint Atlas") : caption);
        QPainter p;
        if (!p.begin(&svg)) return fail(QStringLiteral("%1: cannot write the SVG file").arg(path));
        paintFigure(p, widget, caption);
        p.end();
        if (!QFileInfo::exists(path)) return fail(QStringLiteral("%1: the SVG file was not written").arg(path));
        // The provenance as SVG <metadata> (Dublin Core), beside the <desc> the generator wrote.
        if (!caption.isEmpty()) {
            QFile file(path);
            if (!file.open(QIODevice::ReadOnly)) return fail(QStringLiteral("%1: cannot read the SVG file back").arg(path));
            QByteArray text = file.readAll();
            file.close();
            const qsizetype open = text.indexOf("<svg");
            const qsizetype end = open < 0 ? -1 : text.indexOf('>', open);
            if (end > 0) {
                const QByteArray meta = "\n<metadata><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" "
                                        "xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><rdf:Description><dc:source>" +
                                        caption.toHtmlEscaped().toUtf8() +
                                        "</dc:source><dc:creator>Checkpoint Atlas</dc:creator></rdf:Description></rdf:RDF></metadata>";
                text.insert(end + 1, meta);
                if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(text) != text.size())
                    return fail(QStringLiteral("%1: cannot write the SVG file").arg(path));
            }
        }
        return true;
    }
    if (suffix == QLatin1String("pdf")) {
        QPdfWriter pdf(path);
        pdf.setResolution(96);
        pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setCreator(QStringLiteral("Checkpoint Atlas"));
        QPainter p;
        if (!p.begin(&pdf)) return fail(QStringLiteral("%1: cannot write the PDF file").arg(path));
        const double scale = double(pdf.width()) / double(size.width());
        p.scale(scale, scale);
        paintFigure(p, widget, caption);
        p.end();
        return true;
    }
    return fail(QStringLiteral("%1: choose a .png, .svg or .pdf file name").arg(path));
}

} // namespace atlas
