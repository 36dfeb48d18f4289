#include "view_export.h"

#include "atlas_view.h"

#include <QLabel>
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "chart_widget.h"

#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QLineEdit>
#include <QFormLayout>
#include <QAbstractItemView>
#include <QBoxLayout>
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

// Every layout inside the view redone, children first, then the view's own.
void relayout(QWidget *view)
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

// While alive, the view's controls (buttons, check boxes, sliders, spin boxes, combo boxes, text fields) are
// hidden with the labels of their form rows, and what they were set to is kept as one line of settings: a
// figure is read, not operated. Controls inside tables and trees (their editors) are left alone.
class HiddenControls
{
public:
    explicit HiddenControls(QWidget *view)
    {
        const auto isControl = [](QWidget *w) {
            return qobject_cast<QAbstractButton *>(w) || qobject_cast<QComboBox *>(w) ||
                   qobject_cast<QAbstractSpinBox *>(w) || qobject_cast<QLineEdit *>(w) ||
                   (qobject_cast<QAbstractSlider *>(w) && !qobject_cast<QScrollBar *>(w));
        };
        const auto inItemView = [view](QWidget *w) {
            for (QWidget *p = w->parentWidget(); p && p != view; p = p->parentWidget())
                if (qobject_cast<QAbstractItemView *>(p) || qobject_cast<QAbstractSpinBox *>(p) ||
                    qobject_cast<QComboBox *>(p))
                    return true;
            return false;
        };
        // Each form row's label, by the controls of its field.
        std::map<QWidget *, QWidget *> labelOf;
        for (QFormLayout *form : view->findChildren<QFormLayout *>())
            for (int row = 0; row < form->rowCount(); ++row) {
                QLayoutItem *label = form->itemAt(row, QFormLayout::LabelRole);
                QLayoutItem *field = form->itemAt(row, QFormLayout::FieldRole);
                if (!label || !label->widget() || !field) continue;
                if (field->widget()) labelOf[field->widget()] = label->widget();
                if (QLayout *l = field->layout())
                    for (int i = 0; i < l->count(); ++i)
                        if (QWidget *w = l->itemAt(i)->widget()) labelOf[w] = label->widget();
            }
        // A short label just before a control in a row ("Engine [combo]", "Layer [combo] against [combo]").
        for (QBoxLayout *box : view->findChildren<QBoxLayout *>())
            for (int i = 0; i + 1 < box->count(); ++i) {
                auto *label = qobject_cast<QLabel *>(box->itemAt(i)->widget());
                QWidget *next = box->itemAt(i + 1)->widget();
                if (label && next && isControl(next) && !labelOf.count(next) && label->text().size() <= 40)
                    labelOf[next] = label;
            }
        std::set<QWidget *> labelsDone;
        for (QWidget *w : view->findChildren<QWidget *>()) {
            if (!isControl(w) || !w->isVisibleTo(view) || inItemView(w)) continue;
            QWidget *label = labelOf.count(w) ? labelOf[w] : nullptr;
            if (!label) label = qobject_cast<QWidget *>(w->property("atlasFieldLabel").value<QObject *>()); // ReflowGrid
            if (label && !label->isVisibleTo(view)) label = nullptr;
            const QString name = label ? plain(label) : QString();
            QString value;
            if (auto *c = qobject_cast<QComboBox *>(w)) value = c->currentText();
            else if (auto *b = qobject_cast<QAbstractSpinBox *>(w)) value = b->text();
            else if (auto *e = qobject_cast<QLineEdit *>(w)) value = e->text();
            else if (auto *b = qobject_cast<QAbstractButton *>(w); b && b->isCheckable() && b->isChecked())
                value = QString(b->text()).remove(QLatin1Char('&'));
            if (!w->isEnabled()) value.clear(); // a setting that does not apply now (custom memory of a named GPU)
            if (!value.isEmpty()) m_settings << (name.isEmpty() ? value : name + QStringLiteral(": ") + value);
            hide(w);
            if (label && labelsDone.insert(label).second) hide(label);
        }
        if (!m_hidden.empty()) relayout(view); // the rows they held close up
        m_view = view;
    }
    ~HiddenControls()
    {
        for (auto it = m_hidden.rbegin(); it != m_hidden.rend(); ++it)
            if (*it) (*it)->show();
        if (!m_hidden.empty() && m_view) relayout(m_view);
    }
    QString settings() const { return m_settings.join(QStringLiteral(" · ")); }
    // The same, in lines no wider than `width` in `font` (broken between settings).
    QStringList settingsLines(const QFont &font, int width) const
    {
        const QFontMetrics fm(font);
        QStringList lines;
        QString line;
        for (const QString &item : m_settings) {
            const QString next = line.isEmpty() ? item : line + QStringLiteral(" · ") + item;
            if (!line.isEmpty() && fm.horizontalAdvance(next) > width) {
                lines << line;
                line = item;
            } else {
                line = next;
            }
        }
        if (!line.isEmpty()) lines << line;
        return lines;
    }

private:
    static QString plain(QWidget *label)
    {
        auto *l = qobject_cast<QLabel *>(label);
        QString t = l ? l->text() : QString();
        t.remove(QLatin1Char('&'));
        while (t.endsWith(QLatin1Char(':')))
            t.chop(1);
        return t.trimmed();
    }
    void hide(QWidget *w)
    {
        m_hidden.push_back(w);
        w->hide();
    }
    std::vector<QPointer<QWidget>> m_hidden;
    QPointer<QWidget> m_view;
    QStringList m_settings;
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
    const QStringList lines = caption.split(QLatin1Char('\n'));
    QColor text = widget->palette().color(QPalette::WindowText);
    text.setAlphaF(0.7);
    QFont f = widget->font();
    f.setPointSizeF(f.pointSizeF() * 0.85);
    p.setFont(f);
    for (int i = 0; i < lines.size(); ++i) {
        const QRect strip(0, widget->height() + i * kCaptionHeight, widget->width(), kCaptionHeight);
        p.fillRect(strip, widget->palette().color(QPalette::Window));
        p.setPen(text);
        p.drawText(strip.adjusted(20, 0, -20, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetrics(f).elidedText(lines[i], Qt::ElideMiddle, strip.width() - 40));
    }
}

} // namespace

static int g_pngScale = 2;

void setPngScale(int scale)
{
    g_pngScale = scale == 1 ? 1 : 2;
}

bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    const HiddenControls controls(widget);
    const FullHeight fullHeight(widget);
    // The settings the controls held come first in the caption (a figure has no controls).
    const QString settingsLine = controls.settings();
    QFont captionFont = widget->font();
    captionFont.setPointSizeF(captionFont.pointSizeF() * 0.85);
    QStringList captionLines = controls.settingsLines(captionFont, widget->width() - 40);
    if (!caption.isEmpty()) captionLines << caption;
    const QString captionText = captionLines.join(QLatin1Char('\n'));
    const QSize size = widget->size() + QSize(0, int(captionLines.size()) * kCaptionHeight);
    auto fail = [&](const QString &why) {
        if (error) *error = why;
        return false;
    };
    if (suffix == QLatin1String("png")) {
        QImage image(size * g_pngScale, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(double(g_pngScale));
        image.fill(widget->palette().color(QPalette::Window));
        QPainter p(&image);
        paintFigure(p, widget, captionText);
        p.end();
        // Its real density (twice 96 dpi: pHYs), so a word processor places it at the window's size, and
        // its provenance as PNG text (tEXt).
        const int dotsPerMeter = int(std::lround(g_pngScale * 96 / 0.0254));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.setText(QStringLiteral("Software"), QStringLiteral("Checkpoint Atlas"));
        if (!widget->windowTitle().isEmpty()) image.setText(QStringLiteral("Title"), widget->windowTitle());
        if (!caption.isEmpty()) image.setText(QStringLiteral("Source"), caption);
        if (!settingsLine.isEmpty()) image.setText(QStringLiteral("Settings"), settingsLine);
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
        paintFigure(p, widget, captionText);
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
        paintFigure(p, widget, captionText);
        p.end();
        return true;
    }
    return fail(QStringLiteral("%1: choose a .png, .svg or .pdf file name").arg(path));
}

} // namespace atlas
