// ckpt-atlas-gui: the desktop window and `figures`, the parts that need Qt's GUI. The command line
// (ckpt-atlas, main.cpp) starts this program for them, so that inspect and diff never load Qt.
#include "atlas_application.h"
#include "command_support.h"
#include "figures_command.h"
#include "main_window.h"
#include "settings.h"

#include <QApplication>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    atlas::keepLoadBuffersOnTheHeap();
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "figures") return atlas::runFigures(argc, argv, {args.begin() + 1, args.end()});
    atlas::AtlasApplication app(argc, argv);
    atlas::setApplicationIdentity();
    atlas::MainWindow::applyTheme(atlas::settings::darkTheme() ? atlas::MainWindow::Theme::Dark
                                                               : atlas::MainWindow::Theme::Light);
    atlas::MainWindow window;
    window.show();
    if (args.empty())
        window.openDemo();
    else
        window.openSource(QString::fromStdString(args.front()));
    const int code = app.exec();
    // Quitting never waits for a blocked read: every job was cancelled when the window closed; one
    // that has not ended shortly after (stuck in a read nothing interrupts) would hold the process in
    // the destructors' joins, so the program then leaves at once, its settings already written
    // (each setting is written by a QSettings of its own as it changes).
    if (!window.waitForJobs(std::chrono::steady_clock::now() + std::chrono::seconds(2))) {
        std::fflush(nullptr);
        std::_Exit(code);
    }
    return code;
}
