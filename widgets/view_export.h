#pragma once

#include <QSize>
#include <QString>
#include <QStringList>

class QWidget;

namespace atlas {

// How a figure is laid out. By default a view is exported at the window's width, every scrolling part
// unrolled (up to a few screens).
struct FigureOptions
{
    // > 0: laid out for a document column this many centimetres wide: the width is chosen so the figure's
    // smallest text prints at 8 pt or more, the PNG carries its print density (>= 300 dpi), the SVG and the
    // PDF are this wide in millimetres, and long tables are cut to their first rows.
    double columnCm = 0;
    // Valid: the figure is exactly this size in window pixels, caption included (the PNG is this times its
    // pixel scale); what does not fit is cut, and a cut table says how many rows it leaves out.
    QSize size;
    // > 0: PNG pixels per window pixel, instead of the default (2, or a document's >= 300 dpi).
    int pngScale = 0;
};

// What an export did (for `figures` to print and for the tests).
struct FigureReport
{
    QSize layout;            // the view's size when painted, window pixels (caption strips not included)
    QSize figure;            // the whole figure, caption included, window pixels
    double smallestPx = 0;   // the smallest text drawn, window pixels
    double smallestPt = 0;   // the same at print size (columnCm), else at the screen's 96 dpi
    int pngScale = 0;        // PNG pixels per window pixel
    int pngDpi = 0;          // the density written in the PNG (pHYs)
    QStringList cut;         // one line per table cut short ("Layers: 12 of 118,629 rows")
};

// Column widths `figures --document --width-cm` accepts: narrower than this, no view can be laid out with
// 8-pt text (they need at least ~480 window pixels).
constexpr double kMinColumnCm = 12;
constexpr double kMaxColumnCm = 60;
// Rows a table keeps in a document figure.
constexpr int kDocumentTableRows = 14;

// Saves a view as PNG (at device pixel ratio 2 for crisp print), SVG or PDF, by the path's suffix,
// with `caption` (the figure's provenance) as a line of text under it when given.
// Returns false with a sentence in *error on failure.
bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption = QString(),
                  const FigureOptions &options = {}, FigureReport *report = nullptr);
// Pixels per window pixel of the PNGs written from now on: 2 (the default, sharp on a print or a HiDPI
// screen) or 1 (small files, for a web page such as the README). A document figure picks its own.
void setPngScale(int scale);
int pngScale();

} // namespace atlas
