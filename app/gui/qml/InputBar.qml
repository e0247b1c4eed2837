// The prompt box with Send and Stop. Enter sends, Shift+Enter starts a new line.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Pane {
    id: bar
    padding: theme.spacing
    leftPadding: theme.spacingLarge
    rightPadding: theme.spacingLarge
    background: Rectangle { color: theme.window }
    function focusPrompt() { prompt.forceActiveFocus() }
    function send() {
        if (chat.send(prompt.text)) prompt.clear()
    }

    RowLayout {
        anchors.fill: parent
        spacing: 6
        ScrollView {
            Layout.fillWidth: true
            Layout.preferredHeight: Math.min(Math.max(prompt.implicitHeight, 40), 140)
            TextBox {
                id: prompt
                objectName: "promptInput"
                placeholderText: chat.model.canAnswer ? "Ask something (Enter sends, Shift+Enter for a new line)" : "Open a model to start"
                wrapMode: TextArea.Wrap
                Accessible.name: "Message to the model"
                Keys.onReturnPressed: function(event) {
                    if (event.modifiers & Qt.ShiftModifier) event.accepted = false
                    else bar.send()
                }
                Keys.onEnterPressed: function(event) { bar.send() }
            }
        }
        Button {
            objectName: "sendButton"
            text: "Send  ➤"
            // The primary action: the accent colour.
            palette.button: enabled ? theme.accent : theme.surface
            palette.buttonText: enabled ? theme.accentText : theme.mutedText
            visible: !chat.busy
            enabled: prompt.text.trim().length > 0 && (chat.model.canAnswer || chat.model.loading)
            Accessible.name: "Send"
            ToolTip.visible: hovered
            ToolTip.text: "Send the message (Enter or Ctrl+Enter)"
            onClicked: bar.send()
        }
        Button {
            objectName: "stopButton"
            text: "Stop"
            visible: chat.busy
            Accessible.name: "Stop the answer"
            ToolTip.visible: hovered
            ToolTip.text: "Stop the answer now (Esc)"
            onClicked: chat.stop()
        }
    }
}
