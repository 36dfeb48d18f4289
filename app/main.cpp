#include "atlas_application.h"
#include "diff_command.h"
#include "figures_command.h"
#include "inspect_command.h"
#include "main_window.h"
#include "settings.h"

#include <QApplication>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "inspect") return atlas::runInspect({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "diff") return atlas::runDiff({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "figures")
        return atlas::runFigures(argc, argv, {args.begin() + 1, args.end()});
    if (!args.empty() && (args.front() == "-h" || args.front() == "--help")) {
        std::cout
            << "usage: ckpt-atlas [SOURCE]                 open the desktop app (the demo without SOURCE)\n"
               "       ckpt-atlas inspect [SOURCE] [...]   print the report (ckpt-atlas inspect --help)\n"
               "       ckpt-atlas diff A B [...]           compare two checkpoints (ckpt-atlas diff --help)\n"
               "       ckpt-atlas figures [SOURCE] --out DIR   write every view as PNG and SVG\n";
        return 0;
    }
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
