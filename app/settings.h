#pragma once

#include "version.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace atlas {

// Bump when the saved window state's layout changes, so that an old state is not restored.
inline constexpr int kStateVersion = 1;

// The organisation and application names QSettings() files the settings under.
void setApplicationIdentity();

// A typed view of the application's settings: every key and its default are written here once.
namespace settings {

inline constexpr int kDefaultConnections = 16;
inline constexpr int kMaxConnections = 256;
inline constexpr int kMaxRecentSources = 10;

QString hubEndpoint(); // empty: $HF_ENDPOINT or https://huggingface.co
void setHubEndpoint(const QString &url);
QString caBundle(); // empty: the system trust store only
void setCaBundle(const QString &file);
int connections(); // 1 .. kMaxConnections
void setConnections(int n);
bool darkTheme();
void setDarkTheme(bool dark);
QStringList recentSources(); // newest first
QStringList fitsGpus();     // the GPUs the Overview's "Fits on" checks (default H100, H200, B200, MI300X)
void setFitsGpus(const QStringList &names);
void addRecentSource(const QString &source);
double documentColumnCm(); // File › Export View for a Document's column width (default 16 cm)
void setDocumentColumnCm(double cm);
QByteArray windowGeometry();
QByteArray windowState();
void setWindowGeometry(const QByteArray &geometry, const QByteArray &state);

} // namespace settings

} // namespace atlas
