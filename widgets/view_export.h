#pragma once

#include <QString>

class QWidget;

namespace atlas {

// Saves a view as PNG (at device pixel ratio 2 for crisp print), SVG or PDF, by the path's suffix,
// with `caption` (the figure's provenance) as a line of text under it when given.
// Returns false with a sentence in *error on failure.
bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption = QString());
// Pixels per window pixel of the PNGs written from now on: 2 (the default, sharp on a print or a HiDPI
// screen) or 1 (small files, for a web page such as the README).
void setPngScale(int scale);

} // namespace atlas
