#include "command_line.hpp"

namespace mnemo::gui {

CommandLine parseCommandLine(const QStringList& args) {
    CommandLine cl;
    QStringList folders;
    bool optionsEnded = false;
    for (const QString& a : args) {
        if (optionsEnded) {
            folders << a;
        } else if (a == QLatin1String("--")) {
            optionsEnded = true;
        } else if (a == QLatin1String("-h") || a == QLatin1String("--help")) {
            return {CommandLine::Action::Help, {}, {}};
        } else if (a == QLatin1String("-V") || a == QLatin1String("--version")) {
            return {CommandLine::Action::Version, {}, {}};
        } else if (a.startsWith(QLatin1Char('-')) && a.size() > 1) {
            // Not returned at once: a --help after it still answers with the usage.
            if (cl.error.isEmpty()) cl.error = QStringLiteral("unknown option '%1'").arg(a);
        } else {
            folders << a;
        }
    }
    if (cl.error.isEmpty() && folders.size() > 1)
        cl.error = QStringLiteral("one model folder at most, got %1: %2").arg(folders.size()).arg(folders.join(QStringLiteral(", ")));
    if (!cl.error.isEmpty()) {
        cl.action = CommandLine::Action::Error;
        return cl;
    }
    if (!folders.isEmpty()) cl.modelDir = folders.first();
    return cl;
}

QString usageText() {
    return QStringLiteral(
        "usage: mnemo-chat [MODEL_DIR]\n"
        "       mnemo-chat --help | --version\n"
        "\n"
        "Opens a window to chat with the Mnemo model in MODEL_DIR (without one, the bundled default\n"
        "model). Conversations are kept in ~/.local/share/Mnemo/mnemo-chat/conversations, the settings\n"
        "in ~/.config/Mnemo/mnemo-chat/settings.ini.\n"
        "\n"
        "  -h, --help     this text\n"
        "  -V, --version  the version\n"
        "  --             what follows is the model folder, even if it starts with '-'\n"
        "\n"
        "Qt's own options (-platform NAME, -style NAME, ...) are taken too.\n");
}

QString versionText() { return QStringLiteral("mnemo-chat " MNEMO_VERSION); }

}  // namespace mnemo::gui
