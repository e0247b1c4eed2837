// The settings file (AppSettings): what is kept comes back, and a path that is not a settings file
// to read whole — a symlink to /dev/zero, a FIFO, a file over the cap — is refused with its name
// before QSettings reads it, and left exactly as it was (nothing is written over it).
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <sys/stat.h>

#include "mnemo/io/file_read.hpp"
#include "settings/app_settings.hpp"
#include "settings/settings_controller.hpp"

using namespace mnemo::gui;

namespace {

// Uses the settings as the app does at start and on a change.
void useSettings(AppSettings& s) {
    s.addRecent(QStringLiteral("/models/a"));
    ModelSettings m;
    m.topK = 7;
    s.setModel(QStringLiteral("/models/a"), m);
    s.setKbServer({QStringLiteral("grpc://127.0.0.1:1"), {}, {}, {}, {}});
}

}  // namespace

class TestAppSettings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keepsWhatItIsGiven() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        {
            AppSettings s(ini);
            QCOMPARE(s.problem(), QString());
            useSettings(s);
        }
        AppSettings s(ini);
        QCOMPARE(s.problem(), QString());
        QCOMPARE(s.recentModels(), QStringList{QStringLiteral("/models/a")});
        QCOMPARE(s.model(QStringLiteral("/models/a"))->topK, 7);
        QCOMPARE(s.kbServer().url, QStringLiteral("grpc://127.0.0.1:1"));
    }

    // Issue 29: the seed (new for each answer, or fixed) and what to do with a conversation
    // longer than the context are kept per model folder, and (issue 27) whether answers quote the
    // memories read; a file from before them has the defaults.
    void keepsTheSeedAndTheContextOverflowChoice() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        {
            QSettings old(ini, QSettings::IniFormat);
            old.setValue(QStringLiteral("model_%2Fmodels%2Fold/temperature"), 0.5);  // written before the keys existed
        }
        {
            AppSettings s(ini);
            const std::optional<ModelSettings> old = s.model(QStringLiteral("/models/old"));
            QVERIFY(old);
            QCOMPARE(old->temperature, 0.5);
            QVERIFY(!old->fixedSeed);
            QVERIFY(!old->dropOldestTurns);
            QVERIFY(!old->grounded);
            ModelSettings m;
            m.fixedSeed = true;
            m.seed = 4294967295LL;
            m.dropOldestTurns = true;
            m.grounded = true;
            s.setModel(QStringLiteral("/models/a"), m);
        }
        const std::optional<ModelSettings> back = AppSettings(ini).model(QStringLiteral("/models/a"));
        QVERIFY(back);
        QVERIFY(back->fixedSeed);
        QCOMPARE(back->seed, 4294967295LL);
        QVERIFY(back->dropOldestTurns);
        QVERIFY(back->grounded);
        QSettings raw(ini, QSettings::IniFormat);
        QCOMPARE(raw.value(QStringLiteral("model_%2Fmodels%2Fa/seed_mode")).toString(), QStringLiteral("fixed"));
        QCOMPARE(raw.value(QStringLiteral("model_%2Fmodels%2Fa/context_overflow")).toString(), QStringLiteral("drop_oldest"));
        QCOMPARE(raw.value(QStringLiteral("model_%2Fmodels%2Fa/answers")).toString(), QStringLiteral("grounded"));
    }

    // The palette chosen in the settings outlives the run (app-wide, not per model); a value the
    // app does not know reads as "system", so a hand-edited file cannot leave the window unthemed.
    void keepsTheAppearanceForTheWholeApp() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        {
            AppSettings store(ini);
            QCOMPARE(store.appearance(), QStringLiteral("system"));
            SettingsController settings(store);
            settings.setAppearance(QStringLiteral("dark"));
            QCOMPARE(settings.appearance(), QStringLiteral("dark"));
        }
        {
            AppSettings store(ini);
            QCOMPARE(SettingsController(store).appearance(), QStringLiteral("dark"));
            SettingsController settings(store);
            settings.setAppearance(QStringLiteral("purple"));
            QCOMPARE(settings.appearance(), QStringLiteral("system"));
        }
        QSettings(ini, QSettings::IniFormat).setValue(QStringLiteral("appearance/theme"), QStringLiteral("neon"));
        QCOMPARE(AppSettings(ini).appearance(), QStringLiteral("system"));
    }

    // A settings file written before the glossary renamed its groups (knowledge/ -> kb/,
    // auto_device/ -> fastest_device/) keeps what it held: the last server, and the Fastest
    // device's figures, so the benchmark does not run again. The old groups are gone after.
    void movesTheGroupsOfAnOlderFile() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        const QString key = QStringLiteral("/models/a\ncpu:0 CPU");
        const QString figures = QStringLiteral("cpu\t0\t12.5\t\tCPU 0");
        {
            QSettings old(ini, QSettings::IniFormat);
            old.setValue(QStringLiteral("knowledge/url"), QStringLiteral("grpc://127.0.0.1:7"));
            old.setValue(QStringLiteral("knowledge/token_file"), QStringLiteral("/tokens/t"));
            old.setValue(QStringLiteral("auto_device/") + QString::fromLatin1(QUrl::toPercentEncoding(key)), figures);
        }
        {
            AppSettings s(ini);
            QCOMPARE(s.problem(), QString());
            QCOMPARE(s.kbServer().url, QStringLiteral("grpc://127.0.0.1:7"));
            QCOMPARE(s.kbServer().tokenFile, QStringLiteral("/tokens/t"));
            QCOMPARE(s.fastestDeviceFigures(key), figures);
        }
        QSettings after(ini, QSettings::IniFormat);
        QVERIFY(!after.contains(QStringLiteral("knowledge/url")));
        QVERIFY(after.childGroups().contains(QStringLiteral("kb")));
        QVERIFY(!after.childGroups().contains(QStringLiteral("auto_device")));
        QVERIFY(!after.childGroups().contains(QStringLiteral("knowledge")));
        QCOMPARE(AppSettings(ini).fastestDeviceFigures(key), figures);  // and stays there
    }

    void refusesASymlinkToDevZero() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), ini));
        AppSettings s(ini);
        // Checked before anything is written: QSettings would replace the link's target, and run as
        // root that is /dev/zero itself (QSaveFile renames its new file over it).
        QVERIFY2(s.problem().startsWith(ini + QStringLiteral(": ")) && s.problem().contains(QStringLiteral("character device")),
                 qPrintable(s.problem()));
        useSettings(s);  // kept for this run only
        QCOMPARE(s.recentModels(), QStringList{QStringLiteral("/models/a")});
        QCOMPARE(QFileInfo(ini).symLinkTarget(), QStringLiteral("/dev/zero"));
    }

    void refusesAFifoWithoutWaitingForAWriter() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        QCOMPARE(::mkfifo(QFile::encodeName(ini).constData(), 0600), 0);
        AppSettings s(ini);
        QVERIFY2(s.problem().startsWith(ini + QStringLiteral(": ")) && s.problem().contains(QStringLiteral("FIFO")), qPrintable(s.problem()));
        useSettings(s);
        struct stat st {};
        QCOMPARE(::lstat(QFile::encodeName(ini).constData(), &st), 0);
        QVERIFY(S_ISFIFO(st.st_mode));  // still the FIFO, not replaced by a file
    }

    void refusesAFileOverTheCapAndLeavesItAsItIs() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("settings.ini"));
        const qint64 size = static_cast<qint64>(mnemo::kMaxSmallFileBytes) + 1;
        {
            QFile f(ini);  // sparse after its first line
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("[mine]\nkeep=1\n");
            QVERIFY(f.resize(size));
        }
        AppSettings s(ini);
        QVERIFY2(s.problem().startsWith(ini + QStringLiteral(": ")) && s.problem().contains(QStringLiteral("more than")),
                 qPrintable(s.problem()));
        useSettings(s);
        QCOMPARE(QFileInfo(ini).size(), size);
        QFile f(ini);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.read(14), QByteArray("[mine]\nkeep=1\n"));
    }
};

QTEST_GUILESS_MAIN(TestAppSettings)
#include "test_app_settings.moc"
