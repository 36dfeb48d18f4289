// ckpt-atlas-gui: the desktop window and `figures`, the parts that need Qt's GUI. The command line
// (ckpt-atlas, main.cpp) starts this program for them, so that inspect and diff never load Qt.
#include "atlas_application.h"
#include "command_support.h"
#include "figures_command.h"
#include "main_window.h"
#include "settings.h"

#include <QApplication>

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
    return app.exec();
}
