// mnemo-chat's command line, as a person runs it: --help prints the usage on stdout and exits 0,
// --version prints the project's version and exits 0 (both without a display: they must not need
// a window system), and an unknown option or a second folder exits 2 with the usage on stderr.
#include <QProcess>
#include <QTest>

#include "command_line.hpp"

using namespace mnemo::gui;

namespace {

struct Run {
    int exitCode = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QString out;
    QString err;
};

// Runs bin/mnemo-chat (or $MNEMO_CHAT_BINARY) with `args`; `display`: the offscreen platform,
// else no display at all.
Run run(const QStringList& args, bool display) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(name));
    if (display) env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(qEnvironmentVariable("MNEMO_CHAT_BINARY", QStringLiteral(MNEMO_BUILD_BIN "/mnemo-chat")), args);
    Run r;
    if (!p.waitForFinished(30000)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("did not end in 30 s");
        return r;
    }
    r.exitCode = p.exitCode();
    r.status = p.exitStatus();
    r.out = QString::fromLocal8Bit(p.readAllStandardOutput());
    r.err = QString::fromLocal8Bit(p.readAllStandardError());
    return r;
}

QString describe(const Run& r) {
    return QStringLiteral("exit %1%2\nstdout: %3\nstderr: %4")
        .arg(r.exitCode)
        .arg(r.status == QProcess::CrashExit ? QStringLiteral(" (crashed)") : QString(), r.out, r.err);
}

}  // namespace

class TestCommandLine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void helpPrintsTheUsageAndExitsZeroWithoutADisplay() {
        for (const QString& flag : {QStringLiteral("--help"), QStringLiteral("-h")}) {
            const Run r = run({flag}, false);
            QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(describe(r)));
            QVERIFY2(r.out.startsWith(QStringLiteral("usage: mnemo-chat [MODEL_DIR]\n")), qPrintable(describe(r)));
            QCOMPARE(r.out, usageText());
        }
    }

    void versionPrintsTheProjectVersion() {
        const Run r = run({QStringLiteral("--version")}, false);
        QVERIFY2(r.status == QProcess::NormalExit && r.exitCode == 0, qPrintable(describe(r)));
        QCOMPARE(r.out, QStringLiteral("mnemo-chat " MNEMO_PROJECT_VERSION "\n"));
    }

    void aWrongArgumentExitsTwoWithTheUsageOnStderr() {
        const Run unknown = run({QStringLiteral("--bogus")}, true);
        QVERIFY2(unknown.status == QProcess::NormalExit && unknown.exitCode == 2, qPrintable(describe(unknown)));
        QVERIFY2(unknown.err.contains(QStringLiteral("mnemo-chat: unknown option '--bogus'\nusage: mnemo-chat [MODEL_DIR]")),
                 qPrintable(describe(unknown)));
        QCOMPARE(unknown.out, QString());
        const Run two = run({QStringLiteral("/models/a"), QStringLiteral("/models/b")}, true);
        QVERIFY2(two.status == QProcess::NormalExit && two.exitCode == 2, qPrintable(describe(two)));
        QVERIFY2(two.err.contains(QStringLiteral("one model folder at most, got 2")), qPrintable(describe(two)));
    }

    void parsesTheArguments() {
        QCOMPARE(parseCommandLine({}).action, CommandLine::Action::Run);
        QCOMPARE(parseCommandLine({}).modelDir, QString());
        QCOMPARE(parseCommandLine({QStringLiteral("/m")}).modelDir, QStringLiteral("/m"));
        // --help wins over a wrong option before it; after "--" everything is a folder.
        QCOMPARE(parseCommandLine({QStringLiteral("--bogus"), QStringLiteral("--help")}).action, CommandLine::Action::Help);
        QCOMPARE(parseCommandLine({QStringLiteral("/m"), QStringLiteral("-V")}).action, CommandLine::Action::Version);
        const CommandLine dashed = parseCommandLine({QStringLiteral("--"), QStringLiteral("--help")});
        QCOMPARE(dashed.action, CommandLine::Action::Run);
        QCOMPARE(dashed.modelDir, QStringLiteral("--help"));
        const CommandLine wrong = parseCommandLine({QStringLiteral("-x"), QStringLiteral("/m")});
        QCOMPARE(wrong.action, CommandLine::Action::Error);
        QCOMPARE(wrong.error, QStringLiteral("unknown option '-x'"));
        QCOMPARE(versionText(), QStringLiteral("mnemo-chat " MNEMO_PROJECT_VERSION));
    }
};

QTEST_GUILESS_MAIN(TestCommandLine)
#include "test_command_line.moc"
