#pragma once

#include <QColor>
#include <QString>

namespace atlas {

// The views' one colour language: a meaning has one colour in every view, with a light-theme and a
// dark-theme shade (the dark one lighter where it is text or a thin line on a dark background).
enum class Tone {
    IndexerOwner,  // a layer that computes its own DSA top-k (Anatomy, IndexShare)
    IndexerShared, // a layer that reuses another's top-k (IndexShare)
    IndexerNone,   // a layer with no indexer
    Mtp,           // multi-token prediction layers
    Cached,        // what the KV cache holds (the MLA latent, cached rows)
    Good,          // a verdict that fits
    Bad,           // a verdict that does not, an error, a disagreement
    Muted,         // a pale comparison series, a skipped block
};

// True when the application's palette is the dark theme (a dark window background).
bool darkTheme();
QColor toneColor(Tone tone);
QString toneHex(Tone tone); // "#RRGGBB", for rich text
// `from` moved a fraction t of the way to `to`, opaque: a faint colour as it shows over `from` (an SVG renderer
// that ignores fill-opacity then draws it as meant).
QColor mixColour(const QColor &from, const QColor &to, double t);

// The style sheet of a banner over a view: the synthetic-checkpoint notice or an error.
enum class Banner { Notice, Error };
QString bannerStyle(Banner banner, const QString &extraRules = QString());

} // namespace atlas
