#include "figures_command.h"

#include "anatomy_view.h"

#include "atlas_application.h"
#include "atlas_view.h"
#include "checkpoint_loader.h"
#include "command_support.h"
#include "main_window.h"
#include "overview_view.h"
#include "plan_view.h"
#include "routing.h"
#include "routing_view.h"
#include "settings.h"
#include "view_export.h"

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QImage>
#include <QPainter>
#include <QRegularExpression>
#include <QTimer>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace atlas {

int runFigures(int argc, char **argv, const std::vector<std::string> &args)
{
    std::string source, out, revision;
    int tokens = 4096;
    bool dark = false;
    int width = 1440, height = 900;
    std::string compareSource; // B for the Compare view
    int layer = -1;            // the layer the Anatomy view draws (default: its own pick)
    FigureOptions figure;      // --document / --width-cm, or an exact --size
    bool scaleGiven = false, sizeGiven = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                std::cerr << "ckpt-atlas: " << a << " needs a value\n";
                std::exit(2);
            }
            return args[++i];
        };
        if (a == "--out")
            out = value();
        else if (a == "--revision")
            revision = value();
        else if (a == "--tokens") {
            const std::string v = value();
            char *end = nullptr;
            const long long n = std::strtoll(v.c_str(), &end, 10);
            if (!end || *end || n < 1 || n > static_cast<long long>(kMaxRoutingTokens)) {
                std::cerr << "ckpt-atlas: --tokens takes a whole number from 1 to " << kMaxRoutingTokens
                          << ", not '" << v << "'\n";
                return 2;
            }
            tokens = static_cast<int>(n);
        } else if (a == "--compare") {
            compareSource = value();
        } else if (a == "--layer") {
            const std::string v = value();
            char *end = nullptr;
            const long n = std::strtol(v.c_str(), &end, 10);
            if (!end || *end || n < 0 || n > 1000000) {
                std::cerr << "ckpt-atlas: --layer takes a layer number, not '" << v << "'\n";
                return 2;
            }
            layer = static_cast<int>(n);
        } else if (a == "--scale") {
            const std::string v = value();
            if (v != "1" && v != "2") {
                std::cerr << "ckpt-atlas: --scale takes 1 or 2 (PNG pixels per window pixel), not '" << v << "'\n";
                return 2;
            }
            setPngScale(v == "1" ? 1 : 2);
            scaleGiven = true;
        } else if (a == "--document") {
            if (figure.columnCm <= 0) figure.columnCm = 16;
        } else if (a == "--width-cm") {
            const std::string v = value();
            char *end = nullptr;
            const double cm = std::strtod(v.c_str(), &end);
            if (!end || *end || !(cm >= kMinColumnCm && cm <= kMaxColumnCm)) {
                std::cerr << "ckpt-atlas: --width-cm takes a column width from " << kMinColumnCm << " to " << kMaxColumnCm
                          << " cm, not '" << v << "'" << (end && !*end && cm < kMinColumnCm ? " (narrower, no view fits with 8-pt text)" : "")
                          << "\n";
                return 2;
            }
            figure.columnCm = cm;
        } else if (a == "--dark") {
            dark = true;
        } else if (a == "--size") {
            // WIDTHxHEIGHT of every figure, exactly (the window is that size too).
            const std::string v = value();
            int w = 0, h = 0;
            char x = 0, rest = 0;
            if (std::sscanf(v.c_str(), "%d%c%d%c", &w, &x, &h, &rest) != 3 || x != 'x' || w < 480 || h < 320 ||
                w > 8192 || h > 8192) {
                std::cerr << "ckpt-atlas: --size takes WIDTHxHEIGHT between 480x320 and 8192x8192, not '" << v
                          << "'\n";
                return 2;
            }
            width = w;
            height = h;
            figure.size = QSize(w, h);
            sizeGiven = true;
        }
        else if (a == "-h" || a == "--help") {
            std::cout
                << "usage: ckpt-atlas figures [SOURCE] --out DIR [--tokens N] [--dark] [--compare B] [--layer N]\n"
                   "       [--document [--width-cm W] | --size WxH] [--scale 1|2] [--revision REV]\n"
                   "Renders every view (offscreen) to DIR as PNG and SVG, for design reviews.\n"
                   "  --document     lays each figure out for a document column (16 cm, or --width-cm W):\n"
                   "                 text at least 8 pt printed, PNG at 300 dpi or more (unless --scale),\n"
                   "                 SVG and PDF in millimetres,\n"
                   "                 long tables cut to their first rows\n"
                   "  --size WxH     every figure exactly W x H pixels (at --scale 1, the default with --size)\n";
            return 0;
        } else if (a.starts_with("--")) {
            std::cerr << "ckpt-atlas: unknown option " << a << "\n";
            return 2;
        } else
            source = a;
    }
    if (out.empty()) {
        std::cerr << "ckpt-atlas: figures needs --out DIR\n";
        return 2;
    }
    if (sizeGiven && figure.columnCm > 0) {
        std::cerr << "ckpt-atlas: choose --document (laid out for a column) or --size (exact pixels), not both\n";
        return 2;
    }
    if (sizeGiven && !scaleGiven) setPngScale(1); // --size 1600x1000 writes 1600 x 1000 PNGs
    if (figure.columnCm > 0 && scaleGiven) figure.pngScale = pngScale(); // a small document figure (a web page)
    if (tokens < 1) {
        std::cerr << "ckpt-atlas: --tokens takes a positive number\n";
        return 2;
    }
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    AtlasApplication app(argc, argv);
    setApplicationIdentity();
    MainWindow::applyTheme(dark ? MainWindow::Theme::Dark : MainWindow::Theme::Light);
    MainWindow window(false);
    window.resize(width, height);
    window.show(); // offscreen: nothing appears, but the views get their real sizes

    QEventLoop loop;
    QString failure;
    int failureKind = 3;
    QObject::connect(&window, &MainWindow::checkpointShown, &loop, &QEventLoop::quit); // every view holds it
    QObject::connect(window.loader(), &CheckpointLoader::failed, &loop, [&](const QString &m, int kind) {
        failure = m;
        failureKind = kind;
        loop.quit();
    });
    if (source.empty())
        window.openDemo();
    else
        window.openSource(QString::fromStdString(source), QString::fromStdString(revision));
    if (!window.errorText().isEmpty()) {
        printText(std::cerr, "ckpt-atlas: " + window.errorText().toStdString() + "\n");
        return 2;
    }
    loop.exec();
    if (!failure.isEmpty()) {
        printText(std::cerr, "ckpt-atlas: " + failure.toStdString() + "\n");
        return failureKind;
    }
    if (!window.errorText().isEmpty()) // a view that could not show the checkpoint
        printText(std::cerr,
                  "ckpt-atlas: " +
                      QString(window.errorText()).remove(QRegularExpression(QStringLiteral("<[^>]*>"))).toStdString() +
                      "\n");
    if (layer >= 0) {
        auto *anatomy = qobject_cast<AnatomyView *>(window.view(QStringLiteral("anatomy")));
        if (!anatomy || layer >= anatomy->layerCount()) {
            std::cerr << "ckpt-atlas: --layer " << layer << ": the checkpoint has no such layer\n";
            return 2;
        }
        anatomy->selectLayer(layer);
    }
    auto *routing = qobject_cast<RoutingView *>(window.view(QStringLiteral("routing")));
    if (routing && routing->result() == nullptr && routing->canSimulate()) {
        routing->setTokens(tokens);
        QObject::connect(routing, &RoutingView::simulationFinished, &loop, &QEventLoop::quit);
        routing->runSimulation();
        if (routing->isRunning()) loop.exec();
    }

    // The Plan view's Pareto chart comes from a search on a worker thread: drawn before it is exported.
    if (auto *plan = qobject_cast<PlanView *>(window.view(QStringLiteral("plan"))); plan && plan->searchPending()) {
        QEventLoop searchLoop;
        QObject::connect(plan, &PlanView::searchShown, &searchLoop, &QEventLoop::quit);
        if (plan->searchPending()) searchLoop.exec();
    }

    if (auto *overview = qobject_cast<OverviewView *>(window.view(QStringLiteral("overview")));
        overview && overview->fitsPending()) {
        QEventLoop fitsLoop;
        QObject::connect(overview, &OverviewView::fitsShown, &fitsLoop, &QEventLoop::quit);
        if (overview->fitsPending()) fitsLoop.exec();
    }

    if (!compareSource.empty()) {
        QEventLoop compareLoop;
        QString compareFailure;
        QObject::connect(window.compareLoader(), &CheckpointLoader::finished, &compareLoop, &QEventLoop::quit);
        QObject::connect(window.compareLoader(), &CheckpointLoader::cancelled, &compareLoop, &QEventLoop::quit);
        QObject::connect(window.compareLoader(), &CheckpointLoader::failed, &compareLoop,
                         [&](const QString &m, int) {
                             compareFailure = m;
                             compareLoop.quit();
                         });
        window.compareWith(QString::fromStdString(compareSource));
        compareLoop.exec();
        if (!compareFailure.isEmpty()) {
            printText(std::cerr, "ckpt-atlas: --compare: " + compareFailure.toStdString() + "\n");
            return 3;
        }
    }

    if (!QDir().mkpath(QString::fromStdString(out))) {
        printText(std::cerr, "ckpt-atlas: cannot create " + out + "\n");
        return 3;
    }
    int failures = 0;
    // The whole window first, as a person sees it.
    window.showView(window.views().front());
    QCoreApplication::processEvents();
    const QString windowPath = QDir(QString::fromStdString(out)).filePath(QStringLiteral("00-window.png"));
    QImage shot = window.grab().toImage();
    if (sizeGiven && shot.size() != figure.size * shot.devicePixelRatio()) { // a window cannot be narrower than its menus
        QImage exact(figure.size * shot.devicePixelRatio(), QImage::Format_ARGB32_Premultiplied);
        exact.setDevicePixelRatio(shot.devicePixelRatio());
        exact.fill(window.palette().color(QPalette::Window));
        QPainter(&exact).drawImage(QPoint(), shot);
        shot = exact;
    }
    if (shot.save(windowPath))
        printText(std::cout, windowPath.toStdString() + "\n");
    else
        ++failures;
    int n = 0;
    for (AtlasView *v : window.views()) {
        ++n;
        if (const QString why = window.figureSkipReason(v); !why.isEmpty()) { // one line, no figure
            printText(std::cout, "skipped " + MainWindow::exportFileName(n - 1, v->fileStem(), QLatin1String("")).toStdString() +
                                     ": " + why.toStdString() + "\n");
            continue;
        }
        window.showView(v);
        QCoreApplication::processEvents();
        for (const char *suffix : {".png", ".svg"}) {
            const QString path =
                QDir(QString::fromStdString(out))
                    .filePath(MainWindow::exportFileName(n - 1, v->fileStem(), QLatin1String(suffix)));
            QString error;
            FigureReport done;
            if (exportWidget(v, path, &error, window.captionFor(v), figure, &done)) {
                printText(std::cout, path.toStdString() + "\n");
                if (figure.columnCm > 0 && QLatin1String(suffix) == QLatin1String(".png")) {
                    QString line = QStringLiteral("  %1 px wide for a %2 cm column: smallest text %3 pt, PNG %4x at %5 dpi")
                                       .arg(done.layout.width())
                                       .arg(figure.columnCm)
                                       .arg(done.smallestPt, 0, 'f', 1)
                                       .arg(done.pngScale)
                                       .arg(done.pngDpi);
                    if (!done.cut.isEmpty()) line += QStringLiteral("; cut: ") + done.cut.join(QStringLiteral(", "));
                    printText(std::cout, line.toStdString() + "\n");
                    if (done.smallestPt < 7.95)
                        printText(std::cerr, "ckpt-atlas: " + v->fileStem().toStdString() +
                                                 ": the view cannot be laid out narrower; its smallest text prints at " +
                                                 QString::number(done.smallestPt, 'f', 1).toStdString() + " pt\n");
                }
            } else {
                printText(std::cerr, "ckpt-atlas: " + error.toStdString() + "\n");
                ++failures;
            }
        }
    }
    return failures ? 3 : 0;
}

} // namespace atlas
