#include "settings.h"

#include "view_export.h"

#include <QCoreApplication>
#include <QSettings>

#include <algorithm>

namespace atlas {

void setApplicationIdentity()
{
    QCoreApplication::setOrganizationName(QStringLiteral("CheckpointAtlas"));
    QCoreApplication::setApplicationName(QStringLiteral("ckpt-atlas"));
    QCoreApplication::setApplicationVersion(QString::fromLatin1(kAtlasVersion));
}

namespace settings {

namespace {
const QString kEndpoint = QStringLiteral("network/endpoint");
const QString kCaBundle = QStringLiteral("network/caBundle");
const QString kConnections = QStringLiteral("network/connections");
const QString kTheme = QStringLiteral("ui/theme"); // "light" or "dark"
const QString kRecent = QStringLiteral("recent/sources");
const QString kFitsGpus = QStringLiteral("overview/fitsGpus");
const QString kColumn = QStringLiteral("export/documentColumnCm");
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");
} // namespace

QString hubEndpoint()
{
    return QSettings().value(kEndpoint).toString();
}

void setHubEndpoint(const QString &url)
{
    QSettings().setValue(kEndpoint, url);
}

QString caBundle()
{
    return QSettings().value(kCaBundle).toString();
}

void setCaBundle(const QString &file)
{
    QSettings().setValue(kCaBundle, file);
}

int connections()
{
    return std::clamp(QSettings().value(kConnections, kDefaultConnections).toInt(), 1, kMaxConnections);
}

void setConnections(int n)
{
    QSettings().setValue(kConnections, std::clamp(n, 1, kMaxConnections));
}

bool darkTheme()
{
    return QSettings().value(kTheme).toString() == QLatin1String("dark");
}

void setDarkTheme(bool dark)
{
    QSettings().setValue(kTheme, dark ? QStringLiteral("dark") : QStringLiteral("light"));
}

QStringList fitsGpus()
{
    const QVariant v = QSettings().value(kFitsGpus);
    if (!v.isValid()) return {QStringLiteral("H100"), QStringLiteral("H200"), QStringLiteral("B200"), QStringLiteral("MI300X")};
    return v.toStringList();
}

void setFitsGpus(const QStringList &names)
{
    QSettings().setValue(kFitsGpus, names);
}

double documentColumnCm()
{
    bool ok = false;
    const double cm = QSettings().value(kColumn).toDouble(&ok);
    return ok && cm >= kMinColumnCm && cm <= kMaxColumnCm ? cm : 16.0;
}

void setDocumentColumnCm(double cm)
{
    QSettings().setValue(kColumn, cm);
}

QStringList recentSources()
{
    return QSettings().value(kRecent).toStringList();
}

void addRecentSource(const QString &source)
{
    QStringList recent = recentSources();
    recent.removeAll(source);
    recent.prepend(source);
    while (recent.size() > kMaxRecentSources)
        recent.removeLast();
    QSettings().setValue(kRecent, recent);
}

QByteArray windowGeometry()
{
    return QSettings().value(kGeometry).toByteArray();
}

QByteArray windowState()
{
    return QSettings().value(kState).toByteArray();
}

void setWindowGeometry(const QByteArray &geometry, const QByteArray &state)
{
    QSettings s;
    s.setValue(kGeometry, geometry);
    s.setValue(kState, state);
}

} // namespace settings

} // namespace atlas
