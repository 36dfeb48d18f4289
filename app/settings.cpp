#include "settings.h"

#include <QCoreApplication>

namespace atlas {

void setApplicationIdentity()
{
    QCoreApplication::setOrganizationName(QStringLiteral("CheckpointAtlas"));
    QCoreApplication::setApplicationName(QStringLiteral("ckpt-atlas"));
    QCoreApplication::setApplicationVersion(QStringLiteral("0.1.0"));
}

} // namespace atlas
