#pragma once

#include <QApplication>

namespace atlas {

// The last line of defence: an exception that escapes an event handler or a queued slot is reported
// on stderr and the event dropped, instead of unwinding through Qt (which aborts). Views and the
// main window catch their own errors and show them in the banner; this only catches what they miss.
class AtlasApplication final : public QApplication
{
public:
    // The application font named by the family the system resolves it to ("DejaVu Sans", not the generic
    // "Sans Serif"), so that an exported SVG names a font a document's renderer has.
    AtlasApplication(int &argc, char **argv);
    bool notify(QObject *receiver, QEvent *event) override;
};

} // namespace atlas
