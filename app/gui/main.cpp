// mnemo-chat: chat with a Mnemo model. `mnemo-chat [MODEL_DIR]`; without a folder it opens the
// bundled default model. Conversations are kept in the user's data folder
// (~/.local/share/Mnemo/mnemo-chat/conversations), the sampling settings of each model and the
// recent models in ~/.config/Mnemo/mnemo-chat/settings.ini.
#include <QGuiApplication>
#include <QStandardPaths>
#include <cstdio>

#include "app/default_model.hpp"
#include "chat_controller.hpp"
#include "command_line.hpp"
#include "main_window.hpp"

int main(int argc, char** argv) {
    using mnemo::gui::CommandLine;
    // --help and --version first, before QGuiApplication: they must work without a display.
    QStringList raw;
    for (int i = 1; i < argc; ++i) raw << QString::fromLocal8Bit(argv[i]);
    const CommandLine early = mnemo::gui::parseCommandLine(raw);
    if (early.action == CommandLine::Action::Help) {
        std::fputs(qPrintable(mnemo::gui::usageText()), stdout);
        return 0;
    }
    if (early.action == CommandLine::Action::Version) {
        std::printf("%s\n", qPrintable(mnemo::gui::versionText()));
        return 0;
    }

    mnemo::gui::setUpQuickStyle();
    QGuiApplication app(argc, argv);
    QGuiApplication::setOrganizationName(QStringLiteral("Mnemo"));
    QGuiApplication::setApplicationName(QStringLiteral("mnemo-chat"));
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Mnemo"));

    // Again without the options Qt took (-platform, -style...): what is left must be ours.
    const CommandLine cl = mnemo::gui::parseCommandLine(QGuiApplication::arguments().mid(1));
    if (cl.action == CommandLine::Action::Error) {
        std::fprintf(stderr, "mnemo-chat: %s\n%s", qPrintable(cl.error), qPrintable(mnemo::gui::usageText()));
        return 2;
    }
    const QString folder = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + QStringLiteral("/conversations");
    const QString settings = QStandardPaths::writableLocation(QStandardPaths::AppConfigLocation) + QStringLiteral("/settings.ini");
    mnemo::gui::ChatController chat(folder, settings);
    chat.restoreLatest();

    QQmlApplicationEngine engine;
    const QStringList problems = mnemo::gui::loadMainWindow(engine, chat);
    if (engine.rootObjects().isEmpty()) {
        std::fprintf(stderr, "mnemo-chat: the window could not be loaded:\n%s\n", qPrintable(problems.join(QLatin1Char('\n'))));
        return 1;
    }

    QString model = !cl.modelDir.isEmpty() ? cl.modelDir : QString::fromStdString(mnemo::app::find_default_model());
    if (model.isEmpty()) {
        QStringList places;
        for (const std::string& p : mnemo::app::default_model_places()) places << QString::fromStdString(p);
        chat.showError(QStringLiteral("No default model was found (looked in %1): open a model folder")
                           .arg(places.join(QStringLiteral(", "))));
    } else {
        chat.model()->loadModel(model);
    }
    return QGuiApplication::exec();
}
