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
    font.pointSize: theme.fontBody

    // Qt Quick Controls draw with this palette: the theme's light or dark colours (theme.hpp), so
    // Fusion's buttons, fields and menus match the rest.
    palette.window: theme.window
    palette.windowText: theme.text
    palette.base: theme.field
    palette.alternateBase: theme.surface
    palette.text: theme.text
    palette.button: theme.surface
    palette.buttonText: theme.text
    palette.brightText: theme.accentText
    palette.highlight: theme.accent
    palette.highlightedText: theme.accentText
    palette.link: theme.accent
    palette.light: theme.window
    palette.midlight: theme.hover
    palette.mid: theme.border
    palette.dark: theme.border
    palette.shadow: theme.dark ? "#000000" : "#9aa0a6"
    palette.placeholderText: theme.mutedText
    palette.toolTipBase: theme.surface
    palette.toolTipText: theme.text
    palette.disabled.text: theme.mutedText
    palette.disabled.windowText: theme.mutedText
    palette.disabled.buttonText: theme.mutedText

    // The palette the user chose in the settings (kept between runs), else the desktop's.
    Binding { target: theme; property: "mode"; value: chat.settings.appearance }

    // Typing goes back to the prompt box after a button or an edit (the message delegates call it).
    function focusPrompt() { input.focusPrompt() }

    Shortcut { sequences: ["Ctrl+Return", "Ctrl+Enter"]; onActivated: input.send() }
    Shortcut { sequence: "Escape"; enabled: chat.busy; onActivated: chat.stop() }
    Shortcut { sequence: StandardKey.New; onActivated: { chat.newConversation(); input.focusPrompt() } }
    Shortcut { sequence: "Ctrl+R"; enabled: chat.conversation.count > 0; onActivated: chat.regenerate() }
    Shortcut { sequence: StandardKey.Open; onActivated: modelDialog.open() }
    Shortcut { sequence: StandardKey.Find; onActivated: conversations.focusSearch() }
    // The device picker's list, to choose with the arrows and Enter.
    Shortcut { sequence: "Ctrl+D"; enabled: !chat.model.loading; onActivated: modelBar.openDevicePicker() }
    Shortcut { sequence: "Ctrl+Shift+A"; enabled: chat.model.loaded; onActivated: kbPanel.openDocuments() }

    PathDialog {
        id: modelDialog
        objectName: "modelDialog"
        title: "Open a model folder"
        folder: true
        placeholder: "/path/to/model (a folder with config.json)"
        onChosen: function(path) { chat.model.loadModel(path) }
    }
    PathDialog {
        id: ggufDialog
        objectName: "ggufDialog"
        title: "Open a GGUF model file"
        folder: false
        nameFilters: ["GGUF model (*.gguf)", "All files (*)"]
        placeholder: "/path/to/model.gguf"
        onChosen: function(path) { chat.model.loadModel(path) }
    }
    PathDialog {
        id: memoryDialog
        objectName: "memoryDialog"
        title: "Open a memory folder (made by mnemo memorize)"
        folder: true
        placeholder: "/path/to/memories"
        onChosen: function(path) { chat.kb.useMemoryFolder(path) }
    }
    // Export: the path to write, suggested from the conversation's title (chat.exportSuggestion) in
    // the folder of the last export (the home folder to start with); Enter saves.
    PathDialog {
        id: exportDialog
        objectName: "exportDialog"
        property string format: "markdown"
        property string lastFolder: ""
        title: format === "markdown" ? "Export the conversation as Markdown" : "Export the conversation as JSON"
        folder: false
        save: true
        nameFilters: format === "markdown" ? ["Markdown (*.md)"] : ["JSON (*.json)"]
        function suggest() { path = chat.exportSuggestion(lastFolder, format) }
        onChosen: function(path) {
            if (chat.exportConversation(path, format)) lastFolder = path.substring(0, path.lastIndexOf("/"))
        }
    }
    SettingsPopup { id: settings }
    CompareView { id: compareView }
    KbPanel { id: kbPanel }
    ServerPanel { id: serverPanel }

    SplitView {
        anchors.fill: parent
        // A hairline between the list and the chat, wider to grab than to see.
        handle: Rectangle {
            implicitWidth: 1
            color: theme.border
            containmentMask: Item { x: -3; width: 7; height: parent ? parent.height : 0 }
        }

        ConversationList {
            id: conversations
            SplitView.preferredWidth: 250
            SplitView.minimumWidth: 180
        }

        ColumnLayout {
            SplitView.fillWidth: true
            spacing: 0

            ModelBar {
                id: modelBar
                objectName: "modelBar"
                Layout.fillWidth: true
                onOpenModel: modelDialog.open()
                onOpenGguf: ggufDialog.open()
                onOpenMemories: memoryDialog.open()
                onOpenSettings: settings.open()
                onOpenCompare: compareView.open()
                onOpenKb: kbPanel.open()
                onOpenServer: serverPanel.open()
                // Typing goes on in the prompt box, unless the server entry opened its panel.
                onDeviceChosen: if (!serverPanel.visible) input.focusPrompt()
                onExportAs: function(format) { exportDialog.format = format; exportDialog.suggest(); exportDialog.open() }
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
