// The background runners of the window: a newer load or simulation always wins, an older one's
// results are never delivered, and cancel reaches inside a layer's simulation.
#include "checkpoint_loader.h"
#include "routing_runner.h"
#include "synthetic_layout.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

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
        QVERIFY(finished.wait(20000));
        QTest::qWait(300);
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
        runner.start(request(1, 1u << 21)); // one layer, far longer than the wait below
        QTest::qWait(1500);                 // past the logits, inside the routing loop
        QVERIFY(runner.isRunning());
        runner.cancel();
        QVERIFY(cancelled.wait(5000));
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
        QTest::qWait(1500);
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
        QVERIFY(finished.wait(20000));
        QTest::qWait(300);
        QCOMPARE(finished.size(), 1);
        QCOMPARE(layouts.size(), 1);
        const auto data = layouts.front().front().value<std::shared_ptr<const LoadedCheckpoint>>();
        QCOMPARE(data->checkpoint.source.location, second.path);
    }
};

QTEST_GUILESS_MAIN(TestRunners)
#include "tst_runners.moc"
