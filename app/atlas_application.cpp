#include "atlas_application.h"

#include <QDebug>

#include <exception>

namespace atlas {

bool AtlasApplication::notify(QObject *receiver, QEvent *event)
{
    try {
        return QApplication::notify(receiver, event);
    } catch (const std::exception &e) {
        qCritical("ckpt-atlas: an error escaped an event handler: %s", e.what());
    } catch (...) {
        qCritical("ckpt-atlas: an unknown error escaped an event handler");
    }
    return false;
}

} // namespace atlas
