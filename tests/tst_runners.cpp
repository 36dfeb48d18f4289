// The background runners of the window: a newer load or simulation always wins, an older one's
// results are never delivered, and cancel reaches inside a layer's simulation. No test assumes how
// long work takes: each waits for a state (a worker done, tokens routed) or a signal, and the
// generous timeouts only keep a broken build from hanging.
#include "checkpoint_loader.h"
#include "job_threads.h"
#include "routing_runner.h"
#include "synthetic_layout.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <thread>
#include <unistd.h>

using namespace atlas;

namespace {

RoutingRequest request(int layers, std::uint32_t tokens)
{
    RoutingRequest r;
    r.router.experts = 256;
    r.router.topk = 8;
    r.router.groups = 8;
    r.router.topkGroups = 4;
    for (int l = 0; l < layers; ++l) {
        LayerBias b;
        b.layer = l;
        for (int e = 0; e < 256; ++e)
            b.values.push_back(static_cast<float>(e % 17) * 0.01f);
        r.biases.push_back(std::move(b));
    }
    r.options.tokens = tokens;
    r.options.threads = 1;
    return r;
}

// Long enough never to be reached: waits end on a state or a signal, not on this.
constexpr int kPatience = 300000;

// Every worker thread has run its last statement, and what it posted has been delivered.
template <typename Runner> bool settle(const Runner &runner)
{
    if (!QTest::qWaitFor([&] { return runner.idle(); }, kPatience)) return false;
    QCoreApplication::processEvents();
    return true;
}

} // namespace

class TestRunners : public QObject
{
    Q_OBJECT

private slots:
    void newerSimulationWins()
    {
        RoutingRunner runner;
        QSignalSpy finished(&runner, &RoutingRunner::finished);
        runner.start(request(1, 1u << 20)); // seconds of work
        runner.start(request(2, 64));       // replaces it at once
        QVERIFY(finished.wait(kPatience));
        QVERIFY(settle(runner));
        QCOMPARE(finished.size(), 1);
        const auto run = finished.front().front().value<std::shared_ptr<const RoutingRun>>();
        QCOMPARE(run->tokens, 64u);
        QCOMPARE(run->layers.size(), std::size_t(2));
    }

    void cancelReachesInsideALayer()
    {
        RoutingRunner runner;
        QSignalSpy cancelled(&runner, &RoutingRunner::cancelled);
        QSignalSpy finished(&runner, &RoutingRunner::finished);
        // Four layers of the most tokens allowed: minutes of work on any machine, so the cancel below
        // lands inside a layer, past its first block of logits.
        runner.start(request(4, kMaxRoutingTokens));
        QTRY_VERIFY_WITH_TIMEOUT(runner.tokensRouted() > kLogitBlockTokens, kPatience);
        QVERIFY(runner.isRunning());
        runner.cancel();
        QVERIFY(cancelled.wait(kPatience));
        // It stopped inside the first layer: far fewer tokens than one layer holds were taken up.
        QVERIFY(runner.tokensRouted() < kMaxRoutingTokens);
        QCOMPARE(finished.size(), 0);
        QVERIFY(!runner.isRunning());
    }

    void discardedSimulationIsNeverShown()
    {
        RoutingRunner runner;
        QSignalSpy finished(&runner, &RoutingRunner::finished);
        QSignalSpy cancelled(&runner, &RoutingRunner::cancelled);
        runner.start(request(1, 4096));
        runner.discard(); // a new checkpoint was opened
        QVERIFY(settle(runner));
        QCOMPARE(finished.size() + cancelled.size(), 0);
    }

    void newerLoadWins()
    {
        QTemporaryDir a, b;
        auto spec = synth::smallLayout();
        synth::writeCheckpoint(spec, a.path().toStdString());
        synth::writeCheckpoint(spec, b.path().toStdString());
        CheckpointLoader loader;
        QSignalSpy layouts(&loader, &CheckpointLoader::layoutReady);
        QSignalSpy finished(&loader, &CheckpointLoader::finished);
        SourceSpec first, second;
        first.path = a.path().toStdString();
        second.path = b.path().toStdString();
        loader.start(first, {});
        loader.start(second, {});
        QVERIFY(finished.wait(kPatience));
        QVERIFY(settle(loader));
        QCOMPARE(finished.size(), 1);
        QCOMPARE(layouts.size(), 1);
        const auto data = layouts.front().front().value<std::shared_ptr<const LoadedCheckpoint>>();
        QCOMPARE(data->checkpoint.source.location, second.path);
    }

    // Quitting never waits for a read nothing can interrupt: waitIdle gives up at its deadline while
    // a job is blocked (here in read() on a pipe nobody writes), and reports idle once it has ended.
    void waitIdleGivesUpOnABlockedJob()
    {
        int fds[2];
        QCOMPARE(::pipe(fds), 0);
        {
            JobThreads jobs;
            std::atomic<bool> entered{false};
            jobs.start([&](const std::shared_ptr<JobThreads::Job> &) {
                entered = true;
                char c;
                (void)::read(fds[0], &c, 1); // blocks until the test writes
            });
            while (!entered)
                std::this_thread::yield();
            QVERIFY(!jobs.waitIdle(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
            QVERIFY(jobs.current()->cancel.load()); // it was told to stop
            QCOMPARE(::write(fds[1], "x", 1), ssize_t(1));
            QVERIFY(jobs.waitIdle(std::chrono::steady_clock::now() + std::chrono::hours(1)));
        }
        ::close(fds[0]);
        ::close(fds[1]);
    }
};

QTEST_GUILESS_MAIN(TestRunners)
#include "tst_runners.moc"
