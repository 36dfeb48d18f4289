#pragma once

#include <QString>

class QWidget;

namespace atlas {

// Saves a view as PNG (at device pixel ratio 2 for crisp print), SVG or PDF, by the path's suffix,
// with `caption` (the figure's provenance) as a line of text under it when given.
// Returns false with a sentence in *error on failure.
bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption = QString());

} // namespace atlas
