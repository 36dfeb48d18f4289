#pragma once
// Running the built ckpt-atlas from a test: `figures` on a checkpoint, `inspect --json`. The including
// target defines CKPT_ATLAS_BIN (tests/CMakeLists.txt).
#include <nlohmann/json.hpp>

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace cli {

// Every view of the window rendered offscreen for this checkpoint, as `ckpt-atlas figures` does.
// With ATLAS_SHOTS set, the figures are kept there (a folder per test function) for a developer to look at.
inline bool figuresRender(const QString &dir, QByteArray *err)
{
    QTemporaryDir temp;
    struct Out
    {
        QString dir;
        QString path() const { return dir; }
        QString filePath(const QString &f) const { return dir + QLatin1Char('/') + f; }
    } out{temp.path()};
    if (qEnvironmentVariableIsSet("ATLAS_SHOTS")) {
        out.dir = qEnvironmentVariable("ATLAS_SHOTS") + QLatin1Char('/') + QString::fromLatin1(QTest::currentTestFunction());
        QDir().mkpath(out.dir);
    }
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("figures"), dir, QStringLiteral("--out"), out.path(),
                                             QStringLiteral("--tokens"), QStringLiteral("64")});
    if (!p.waitForFinished(300000)) return false;
    *err = p.readAllStandardError();
    return p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0 &&
           QFileInfo::exists(out.filePath(QStringLiteral("06-cache.png"))) &&
           QFileInfo::exists(out.filePath(QStringLiteral("01-overview.svg")));
}

// `ckpt-atlas inspect DIR --json ARGS...`, parsed; null when it fails.
inline nlohmann::json inspectJson(const QString &dir, const QStringList &args, QByteArray *err)
{
    QProcess p;
    p.start(QStringLiteral(CKPT_ATLAS_BIN), QStringList{QStringLiteral("inspect"), dir, QStringLiteral("--json")} + args);
    if (!p.waitForFinished(300000)) return nullptr;
    *err = p.readAllStandardError();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) return nullptr;
    return nlohmann::json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
}

// `ckpt-atlas plan DIR --json ARGS...`, parsed (exit 0 fits, 1 does not); null when it fails otherwise.
inline nlohmann::json planJson(const QString &dir, const QStringList &args, QByteArray *err)
{
    QProcess p;
    p.start(QStringLiteral(CKPT_ATLAS_BIN), QStringList{QStringLiteral("plan"), dir, QStringLiteral("--json")} + args);
    if (!p.waitForFinished(300000)) return nullptr;
    *err = p.readAllStandardError();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() > 1) return nullptr;
    return nlohmann::json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
}

} // namespace cli
