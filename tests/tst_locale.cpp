// Numbers never follow the locale: Qt sets the C library's locale from the environment (a German
// desktop gives "753,33"), and everything model/ formats must read the same there as under "C".
// The whole report (text and JSON, biases and routing included) is made under both and compared
// byte for byte.
#include "diff.h"
#include "load_pipeline.h"
#include "report.h"
#include "synthetic_layout.h"

#include <QTemporaryDir>
#include <QTest>

#include <clocale>
#include <cstdio>
#include <string>

using namespace atlas;

namespace {

// What scripts/setup.sh generates (locale-gen); a decimal comma, a dot for thousands.
constexpr const char *kCommaLocale = "de_DE.UTF-8";

struct Outputs
{
    std::string text, json, diffText, counts;
};

Outputs everything(const LoadResult &r)
{
    Outputs o;
    o.text = formatReport(r);
    o.json = buildReport(r).dump(2);
    const CheckpointDiff d = diffCheckpoints(*r.layout, *r.layout, r.biases.get(), r.biases.get());
    o.diffText = formatDiff(d);
    o.counts = shortCount(753'329'940'480ULL) + " " + binaryBytes(755'617'140'416ULL);
    return o;
}

} // namespace

class TestLocale : public QObject
{
    Q_OBJECT

private slots:
    void reportIsTheSameUnderADecimalComma()
    {
        QTemporaryDir dir;
        synth::writeCheckpoint(synth::smallLayout(), dir.path().toStdString());
        LoadRequest request;
        request.spec.path = dir.path().toStdString();
        request.biases = true;
        request.simulate = true;
        request.routing.tokens = 512;
        request.routing.logitStd = 0.75f;
        const LoadResult result = LoadPipeline(request).run();

        QVERIFY(std::setlocale(LC_ALL, "C"));
        const Outputs c = everything(result);
        QVERIFY2(std::setlocale(LC_ALL, kCommaLocale),
                 "the de_DE.UTF-8 locale is missing: scripts/setup.sh installs 'locales' and generates it");
        // The locale really writes a comma: without the fixes, the outputs below would differ.
        char probe[16];
        std::snprintf(probe, sizeof probe, "%.2f", 1.5);
        QCOMPARE(std::string(probe), std::string("1,50"));
        const Outputs de = everything(result);
        std::setlocale(LC_ALL, "C");

        QCOMPARE(c.counts, std::string("753.33 B 703.72 GiB"));
        QCOMPARE(de.counts, c.counts);
        QVERIFY(c.text.find("Routing simulation") != std::string::npos);
        QCOMPARE(de.text, c.text);
        QCOMPARE(de.json, c.json);
        QCOMPARE(de.diffText, c.diffText);
    }
};

QTEST_GUILESS_MAIN(TestLocale)
#include "tst_locale.moc"
