#include "view_export.h"

#include "atlas_view.h"

#include <QLabel>
#include <vector>

#include "chart_widget.h"

#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QWidget>

namespace atlas {

namespace {

constexpr int kCaptionHeight = 26;

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
        return QFileInfo::exists(path) ? true
                                       : fail(QStringLiteral("%1: the SVG file was not written").arg(path));
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
