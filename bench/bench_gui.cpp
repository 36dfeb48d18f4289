// Drives the real main window offscreen over the full demo (141 shards, 118,629 tensors) the way a
// person would: open it, visit every view, type a filter into the Layers tree, drag the context
// slider end to end, run Simulate with 4,096 tokens. A 1 ms timer on the GUI thread records how
// late it fires: the longest gap is the longest the window could not answer. Prints the figures.
//
//   bench_gui            the whole scenario once (QT_QPA_PLATFORM=offscreen unless set)
//   ATLAS_BENCH_GAPS=MS  also print each gap over MS milliseconds (12 if MS is not a number over 0), when in
//                        its step it came and its CLOCK_MONOTONIC end (for `perf record -k CLOCK_MONOTONIC` and
//                        `perf report --time`)
#include "atlas_application.h"
#include "atlas_view.h"
#include "checkpoint_loader.h"
#include "main_window.h"
#include "routing_view.h"
#include "settings.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTest>
#include <QTimer>

#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

namespace {

// Measures event-loop latency: the time between two ticks of a 1 ms timer, less the 1 ms. Each gap is
// also split by what the GUI thread did meanwhile (its CPU time): a gap it spent running is the window's
// own work; a gap it spent asleep or waiting for a core is the host's (a virtual CPU woken late) or
// another program's. Both are reported: the stall is what a user sees, the work is what the code costs.
class StallMonitor final : public QObject
{
public:
    StallMonitor()
    {
        m_timer.setInterval(1);
        m_timer.setTimerType(Qt::PreciseTimer);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            const double cpuNow = cpuMs(CLOCK_THREAD_CPUTIME_ID);
            const double processNow = cpuMs(CLOCK_PROCESS_CPUTIME_ID);
            if (m_last >= 0) {
                const double gapMs = double(now - m_last) / 1e6 - 1.0;
                const double ranMs = std::min(cpuNow - m_lastCpu, gapMs + 1.0);
                if (m_traceGaps > 0 && gapMs > m_traceGaps) {
                    timespec ts;
                    clock_gettime(CLOCK_MONOTONIC, &ts);
                    std::fprintf(stderr,
                                 "gap of %.1f ms at %.1f ms into \"%s\" (monotonic %.6f); the GUI thread ran %.1f ms "
                                 "of it, the whole process %.1f ms\n",
                                 gapMs, double(now - m_stepStart) / 1e6, m_step.c_str(), ts.tv_sec + ts.tv_nsec / 1e9,
                                 ranMs, processNow - m_lastProcess);
                }
                Worst &w = m_worstByStep[m_step];
                if (gapMs > w.stall) {
                    w.stall = gapMs;
                    w.stallRan = ranMs;
                }
                w.work = std::max(w.work, ranMs - 1.0); // less the tick's own millisecond, as the stall
                if (ranMs < 1.0) m_slept = std::max(m_slept, gapMs);
            }
            m_last = now;
            m_lastCpu = cpuNow;
            m_lastProcess = processNow;
        });
        m_clock.start();
        m_timer.start();
    }
    // A step of the scenario; `idle` marks one in which the window has nothing to do (the host's floor),
    // kept out of the maxima.
    void step(const std::string &name, bool idle = false)
    {
        m_step = name;
        m_stepStart = m_clock.nsecsElapsed();
        m_last = -1; // a gap spanning two steps belongs to neither
        m_order.push_back(name);
        if (idle) m_idle = name;
    }
    void report() const
    {
        std::string stallStep, workStep;
        double stall = 0, work = 0;
        for (const auto &name : m_order) {
            const Worst w = m_worstByStep.count(name) ? m_worstByStep.at(name) : Worst{};
            std::printf("  %-44s longest stall %6.1f ms (GUI thread ran %4.1f ms of it), longest work %5.1f ms\n",
                        name.c_str(), w.stall, w.stallRan, std::max(0.0, w.work));
            if (name == m_idle) continue;
            if (w.stall > stall) {
                stall = w.stall;
                stallStep = name;
            }
            if (w.work > work) {
                work = w.work;
                workStep = name;
            }
        }
        std::printf("max GUI-thread stall: %.0f ms (%s); target <= 20 ms\n", stall, stallStep.c_str());
        std::printf("max GUI-thread work: %.0f ms (%s); target <= 20 ms\n", work, workStep.c_str());
        std::printf("host floor: %.0f ms (the longest stall the GUI thread slept through, running under 1 ms of "
                    "it, over the whole run; in the idle step alone %.0f ms)\n",
                    m_slept, m_idle.empty() || !m_worstByStep.count(m_idle) ? 0.0 : m_worstByStep.at(m_idle).stall);
    }

private:
    struct Worst
    {
        double stall = 0;    // the longest gap
        double stallRan = 0; // how much of it the GUI thread ran
        double work = 0;     // the longest the GUI thread ran between two ticks
    };
    static double cpuMs(clockid_t clock)
    {
        timespec ts;
        clock_gettime(clock, &ts);
        return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
    }
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_stepStart = 0;
    const double m_traceGaps = [] {
        const char *v = std::getenv("ATLAS_BENCH_GAPS");
        if (!v) return 0.0;
        const double ms = std::atof(v);
        return ms > 0 ? ms : 12.0;
    }();
    qint64 m_last = -1;
    double m_lastCpu = 0;
    double m_lastProcess = 0;
    double m_slept = 0; // the longest gap in which the GUI thread did not run: the host's, not the window's
    std::string m_step = "start";
    std::string m_idle;
    std::vector<std::string> m_order;
    std::map<std::string, Worst> m_worstByStep;
};

// Runs the event loop for ms. Not QTest::qWait: it sleeps 10 ms between its passes over the events, and
// the monitor would count each sleep as a stall of the window.
void settle(int ms)
{
    QEventLoop loop;
    QTimer::singleShot(ms, Qt::PreciseTimer, &loop, &QEventLoop::quit);
    loop.exec();
}

// Types text as keystrokes gap ms apart (QTest::keyClicks with a delay waits with qWait).
void typeSlowly(QWidget *w, const QString &text, int gap)
{
    for (const QChar c : text) {
        QTest::keyClick(w, c.toLatin1());
        settle(gap);
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    atlas::AtlasApplication app(argc, argv);
    atlas::setApplicationIdentity();
    atlas::MainWindow::applyTheme(atlas::MainWindow::Theme::Light);
    atlas::MainWindow window(false);
    window.resize(1440, 900);
    window.show();
    settle(200);

    StallMonitor monitor;
    QElapsedTimer total;
    total.start();

    monitor.step("idle, 3 s with nothing to do (the host's floor)", true);
    settle(3000);

    monitor.step("open the demo (layout, then biases)");
    QSignalSpy loaded(&window, &atlas::MainWindow::checkpointShown);
    window.openDemo();
    if (!loaded.wait(300000)) {
        std::fprintf(stderr, "bench_gui: the demo did not load: %s\n", qPrintable(window.errorText()));
        return 1;
    }
    settle(300);

    for (atlas::AtlasView *v : window.views()) {
        monitor.step("show the " + v->title().toStdString() + " view");
        window.showView(v);
        settle(300);
    }

    auto *layers = window.view(QStringLiteral("layers"));
    window.showView(layers);
    settle(200);
    auto *filter = layers->findChild<QLineEdit *>();
    monitor.step("type 'experts.17' into the Layers filter");
    typeSlowly(filter, QStringLiteral("experts.17"), 60);
    settle(600); // past the debounce
    monitor.step("type 'e_score' into the Layers filter");
    filter->clear();
    typeSlowly(filter, QStringLiteral("e_score"), 60);
    settle(600);
    monitor.step("clear the Layers filter");
    filter->clear();
    settle(600);

    auto *cache = window.view(QStringLiteral("cache"));
    window.showView(cache);
    settle(200);
    auto *slider = cache->findChild<QSlider *>();
    monitor.step("drag the context slider end to end");
    for (int pass = 0; pass < 6; ++pass) // each stop (1 K, 2 K, ... the maximum), up and down, three times
        for (int i = 0; i <= slider->maximum() - slider->minimum(); ++i) {
            slider->setValue(pass % 2 == 0 ? slider->minimum() + i : slider->maximum() - i);
            settle(8);
        }
    settle(200);

    // The Plan view: a GPU count and a context typed digit by digit, each a new plan (and for the context a
    // new search of deployments, on a worker).
    auto *plan = window.view(QStringLiteral("plan"));
    window.showView(plan);
    settle(300);
    QSpinBox *gpus = nullptr, *context = nullptr;
    for (auto *s : plan->findChildren<QSpinBox *>()) {
        if (s->minimum() == 1 && s->maximum() == 4096 && !gpus) gpus = s;
        if (s->suffix() == QLatin1String(" tokens")) context = s;
    }
    if (!gpus || !context) {
        std::fprintf(stderr, "bench_gui: the Plan view's GPU count or context field was not found\n");
        return 1;
    }
    monitor.step("type a GPU count and a context into the Plan");
    for (auto [field, text] : {std::pair{gpus, QStringLiteral("16")}, std::pair{context, QStringLiteral("65536")}}) {
        field->setFocus();
        field->selectAll();
        typeSlowly(field, text, 60);
        settle(400);
    }
    settle(600);

    auto *routing = qobject_cast<atlas::RoutingView *>(window.view(QStringLiteral("routing")));
    window.showView(routing);
    routing->setTokens(4096);
    settle(200);
    monitor.step("Simulate 4,096 tokens per layer");
    QSignalSpy simulated(routing, &atlas::RoutingView::simulationFinished);
    QPushButton *run = nullptr;
    for (auto *b : routing->findChildren<QPushButton *>())
        if (b->text() == QLatin1String("Simulate")) run = b;
    QTest::mouseClick(run, Qt::LeftButton);
    if (!simulated.wait(300000)) {
        std::fprintf(stderr, "bench_gui: the simulation did not finish\n");
        return 1;
    }
    settle(300);
    monitor.step("end");

    std::printf("bench_gui: full demo, 1440x900 offscreen, %.1f s in all\n", double(total.elapsed()) / 1000.0);
    monitor.report();
    return 0;
}
