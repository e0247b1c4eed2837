// Loading the app's QML: the program and the test that loads the main window use this one
// function, so the test sees exactly the imports and bindings the program does.
#pragma once

#include <QQmlApplicationEngine>
#include <QStringList>

namespace mnemo::gui {

class ChatController;

inline constexpr const char* kMainQmlUrl = "qrc:/qml/Main.qml";

// Sets the Qt Quick Controls style (Fusion, which follows the system's light or dark palette),
// exposes `chat` and `theme` (theme/theme.hpp) to QML and loads qrc:/qml/Main.qml. Returns every QML warning and error seen
// while loading (a missing QML module is one of them); empty when the window loaded cleanly.
QStringList loadMainWindow(QQmlApplicationEngine& engine, ChatController& chat);

// Called once before the QGuiApplication exists.
void setUpQuickStyle();

}  // namespace mnemo::gui
