#pragma once

#include <QString>

class QWidget;

namespace atlas {

// Saves a view as PNG (at device pixel ratio 2 for crisp print), SVG or PDF, by the path's suffix.
// Returns false with a sentence in *error on failure.
bool exportWidget(QWidget *widget, const QString &path, QString *error);

} // namespace atlas
