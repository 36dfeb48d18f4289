#include "atlas_application.h"

#include "untrusted_text.h"

#include <QDebug>
#include <QFont>
#include <QFontInfo>

#include <exception>

namespace atlas {

AtlasApplication::AtlasApplication(int &argc, char **argv) : QApplication(argc, argv)
{
    QFont f = font();
    const QString real = QFontInfo(f).family();
    if (!real.isEmpty() && real != f.family()) {
        f.setFamily(real);
        setFont(f);
    }
}

bool AtlasApplication::notify(QObject *receiver, QEvent *event)
{
    try {
        return QApplication::notify(receiver, event);
    } catch (const std::exception &e) {
        qCritical("ckpt-atlas: an error escaped an event handler: %s", printable(e.what()).c_str());
    } catch (...) {
        qCritical("ckpt-atlas: an unknown error escaped an event handler");
    }
    return false;
}

} // namespace atlas
