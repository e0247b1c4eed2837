// The main window: conversations on the left; on the right the model and device bar, the chat,
// the performance strip and the prompt box. Every action calls the C++ controller `chat`
// (ChatController) or one of its controllers (chat.model, chat.settings, chat.kb,
// chat.fastestDevice, chat.compare, chat.server); nothing here decides anything on its own. Text
// from outside the app (titles, references, model and device names, reasons) is shown as plain
// text, never as HTML.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs

ApplicationWindow {
    id: window
    width: 1366
    height: 768
    minimumWidth: 900
    minimumHeight: 560
    visible: true
    title: chat.title.length > 0 ? chat.title + " — Mnemo" : "Mnemo"

    Shortcut { sequences: ["Ctrl+Return", "Ctrl+Enter"]; onActivated: input.send() }
    Shortcut { sequence: "Escape"; enabled: chat.busy; onActivated: chat.stop() }
    Shortcut { sequence: StandardKey.New; onActivated: { chat.newConversation(); input.focusPrompt() } }
    Shortcut { sequence: "Ctrl+R"; enabled: chat.conversation.count > 0; onActivated: chat.regenerate() }
    Shortcut { sequence: StandardKey.Open; onActivated: modelDialog.open() }
    Shortcut { sequence: StandardKey.Find; onActivated: conversations.focusSearch() }

    FolderDialog {
        id: modelDialog
        objectName: "modelDialog"
        title: "Open a model folder"
        onAccepted: chat.model.loadModel(selectedFolder)
    }
    FileDialog {
        id: ggufDialog
        objectName: "ggufDialog"
        title: "Open a GGUF model file"
        nameFilters: ["GGUF model (*.gguf)", "All files (*)"]
        onAccepted: chat.model.loadModel(selectedFile)
    }
    FolderDialog {
        id: memoryDialog
        title: "Open a memory folder (made by mnemo memorize)"
        onAccepted: chat.kb.useMemoryFolder(selectedFolder)
    }
    FileDialog {
        id: exportDialog
        objectName: "exportDialog"
        property string format: "markdown"
        title: format === "markdown" ? "Export the conversation as Markdown" : "Export the conversation as JSON"
        fileMode: FileDialog.SaveFile
        nameFilters: format === "markdown" ? ["Markdown (*.md)"] : ["JSON (*.json)"]
        onAccepted: chat.exportConversation(selectedFile, format)
    }
    SettingsPopup { id: settings }
    CompareView { id: compareView }
    KbPanel { id: kbPanel }
    ServerPanel { id: serverPanel }

    SplitView {
        anchors.fill: parent

        ConversationList {
            id: conversations
            SplitView.preferredWidth: 250
            SplitView.minimumWidth: 180
        }

        ColumnLayout {
            SplitView.fillWidth: true
            spacing: 0

            ModelBar {
                Layout.fillWidth: true
                onOpenModel: modelDialog.open()
                onOpenGguf: ggufDialog.open()
                onOpenMemories: memoryDialog.open()
                onOpenSettings: settings.open()
                onOpenCompare: compareView.open()
                onOpenKb: kbPanel.open()
                onOpenServer: serverPanel.open()
                onExportAs: function(format) { exportDialog.format = format; exportDialog.open() }
            }

            ChatView {
                id: chatView
                objectName: "chatView"
                Layout.fillWidth: true
                Layout.fillHeight: true
            }

            NoticeBar {
                Layout.fillWidth: true
            }

            StatusLine {
                Layout.fillWidth: true
            }

            PerformanceStrip {
                Layout.fillWidth: true
            }

            InputBar {
                id: input
                Layout.fillWidth: true
            }
        }
    }

    Component.onCompleted: input.focusPrompt()
}
