// mnemo-chat: chat with a Mnemo model. `mnemo-chat [MODEL_DIR]`; without a folder it opens the
// bundled default model. Conversations are kept in the user's data folder
// (~/.local/share/Mnemo/mnemo-chat/conversations), the sampling settings of each model and the
// recent models in ~/.config/Mnemo/mnemo-chat/settings.ini.
#include <QGuiApplication>
#include <QStandardPaths>
#include <cstdio>

#include "app/default_model.hpp"
#include "chat_controller.hpp"
#include "main_window.hpp"

int main(int argc, char** argv) {
    mnemo::gui::setUpQuickStyle();
    QGuiApplication app(argc, argv);
    QGuiApplication::setOrganizationName(QStringLiteral("Mnemo"));
    QGuiApplication::setApplicationName(QStringLiteral("mnemo-chat"));
    QGuiApplication::setApplicationDisplayName(QStringLiteral("Mnemo"));

    const QStringList args = QGuiApplication::arguments();
    if (args.size() > 2 || (args.size() == 2 && args.at(1).startsWith(QLatin1Char('-')))) {
        std::fprintf(stderr, "usage: mnemo-chat [MODEL_DIR]\n");
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

    QString model = args.size() == 2 ? args.at(1) : QString::fromStdString(mnemo::app::find_default_model());
    if (model.isEmpty()) {
        QStringList places;
        for (const std::string& p : mnemo::app::default_model_places()) places << QString::fromStdString(p);
        chat.showError(QStringLiteral("No default model was found (looked in %1): open a model folder")
                           .arg(places.join(QStringLiteral(", "))));
    } else {
        chat.loadModel(model);
    }
    return QGuiApplication::exec();
}
