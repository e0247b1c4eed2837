// mnemo-chat's command line: `mnemo-chat [MODEL_DIR]`, `--help`, `--version`. Parsed twice: on the
// raw arguments before the window system is touched, so that --help and --version work without a
// display, and on what QGuiApplication leaves once it has taken its own options (-platform, -style…).
#pragma once

#include <QString>
#include <QStringList>

namespace mnemo::gui {

struct CommandLine {
    enum class Action { Run, Help, Version, Error };
    Action action = Action::Run;
    QString modelDir;  // with Run: the folder to open; empty: the default model
    QString error;     // with Error: what is wrong with the arguments
};

// `args` without the program's name. --help (-h) or --version (-V) anywhere before "--" wins;
// after "--" every argument is a folder.
CommandLine parseCommandLine(const QStringList& args);

QString usageText();    // for --help (stdout) and for a wrong argument (stderr)
QString versionText();  // "mnemo-chat X.Y.Z": the project version CMake defines, as `mnemo --version`

}  // namespace mnemo::gui
