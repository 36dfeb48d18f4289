#pragma once

#include <QSettings>

namespace atlas {

// Bump when the saved window state's layout changes, so that an old state is not restored.
inline constexpr int kStateVersion = 1;

// The application's settings live in QSettings() under the organisation and application names set in
// main(): network/endpoint, network/caBundle, network/connections, ui/theme, window/geometry,
// window/state, recent/sources.
void setApplicationIdentity();

} // namespace atlas
