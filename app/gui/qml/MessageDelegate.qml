// One message: who said it (avatar and name), the text as Markdown prose and code panels (each with
// its own Copy), and its actions (copy, edit a prompt, regenerate the last answer); under an
// answer, its references and measurements. Colours and sizes come from `theme`.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

ColumnLayout {
    id: message
    required property int index
    required property string role
    required property string text
    required property bool streaming
    required property string finish
    required property string error
    required property string device
    required property int tokens
    required property double tokensPerSecond
    required property double firstTokenMs
    required property var references
    required property int referenceCount
    required property string notice
    required property string html
    required property var blocks  // [{kind: "markdown", html} | {kind: "code", code, language}]
    required property double seed         // the answer's sampler seed; -1: not known
    required property int version         // which version is shown (‹ k/n ›), 0-based
    required property int versionCount    // 1: never regenerated or edited
    required property int droppedMessages // oldest messages left out to fit the context
    property bool isLast: false
    readonly property bool isAnswer: role === "assistant"
    property bool editing: false
    spacing: theme.spacingSmall

    // The edit box's Enter, Ctrl+Enter and the Send edited button: continue from the edited text;
    // typing goes back to the prompt box.
    function saveEdit() {
        const row = message.index
        const text = editor.text
        message.editing = false
        // First: editMessage replaces this delegate, after which it has no window to ask.
        ApplicationWindow.window.focusPrompt()
        chat.editMessage(row, text)
    }
    function cancelEdit() {
        message.editing = false
        ApplicationWindow.window.focusPrompt()
    }

    // Who speaks: a round avatar with an initial and the name; the message's actions on the right
    // (flat, muted, never keeping focus: typing stays in the prompt box).
    RowLayout {
        Layout.fillWidth: true
        spacing: theme.spacing
        Rectangle {
            objectName: "avatar"
            implicitWidth: 24
            implicitHeight: 24
            radius: 12
            color: message.isAnswer ? theme.accent : theme.mutedText
            Label {
                anchors.centerIn: parent
                text: message.isAnswer ? "M" : "Y"
                color: theme.accentText
                font.pointSize: theme.fontSmall
                font.bold: true
            }
        }
        Label {
            text: message.isAnswer ? "Mnemo" : "You"
            font.bold: true
            font.pointSize: theme.fontBody
            color: theme.text
        }
        Label {
            visible: message.streaming
            text: "answering…"
            color: theme.mutedText
            font.pointSize: theme.fontSmall
        }
        Item { Layout.fillWidth: true; implicitHeight: 1 }
        // ‹ k/n ›: the other versions of this message (earlier answers of a regeneration, the
        // prompt before an edit with what followed it), as LM Studio and Jan show them.
        RowLayout {
            objectName: "versionNavigator"
            visible: message.versionCount > 1 && !message.editing
            spacing: 0
            ToolButton {
                objectName: "previousVersion"
                text: "‹"
                enabled: message.version > 0 && !chat.busy
                focusPolicy: Qt.NoFocus
                Accessible.name: "Show the previous version of this message"
                onClicked: chat.showVersion(message.index, message.version - 1)
            }
            Label {
                objectName: "versionLabel"
                text: (message.version + 1) + "/" + message.versionCount
                color: theme.mutedText
                font.pointSize: theme.fontSmall
                Accessible.name: "Version " + (message.version + 1) + " of " + message.versionCount
            }
            ToolButton {
                objectName: "nextVersion"
                text: "›"
                enabled: message.version < message.versionCount - 1 && !chat.busy
                focusPolicy: Qt.NoFocus
                Accessible.name: "Show the next version of this message"
                onClicked: chat.showVersion(message.index, message.version + 1)
            }
        }
        ToolButton {
            text: "❐ Copy"
            visible: !message.editing
            font.pointSize: theme.fontSmall
            focusPolicy: Qt.NoFocus
            Accessible.name: "Copy this message"
            onClicked: chat.copyToClipboard(message.text)
        }
        ToolButton {
            objectName: "editButton"
            text: "✎ Edit"
            visible: !message.isAnswer && !message.editing
            font.pointSize: theme.fontSmall
            focusPolicy: Qt.NoFocus
            Accessible.name: "Edit this message and continue from it"
            ToolTip.visible: hovered
            ToolTip.text: "Edit this message; the conversation continues from it"
            onClicked: { editor.text = message.text; message.editing = true; editor.forceActiveFocus() }
        }
        ToolButton {
            text: "↻ Regenerate"
            visible: message.isAnswer && message.isLast && !message.streaming
            font.pointSize: theme.fontSmall
            focusPolicy: Qt.NoFocus
            Accessible.name: "Regenerate this answer"
            ToolTip.visible: hovered
            ToolTip.text: "Answer again (Ctrl+R)"
            onClicked: chat.regenerate()
        }
    }

    // The text: the user's in a tinted card, the answer plain under its avatar. Prose and code
    // blocks one under the other (ConversationModel's blocks role): each code block its own panel.
    Rectangle {
        objectName: "messageBody"
        Layout.fillWidth: true
        Layout.leftMargin: message.isAnswer ? 32 : 0
        visible: !message.editing
        implicitHeight: body.implicitHeight + 2 * padding
        readonly property int padding: message.isAnswer ? 0 : theme.spacing + 4
        color: message.isAnswer ? "transparent" : theme.userBubble
        radius: theme.radius
        ColumnLayout {
            id: body
            x: parent.padding
            y: parent.padding
            width: parent.width - 2 * parent.padding
            spacing: theme.spacing
            Label {
                visible: message.blocks.length === 0
                text: message.streaming ? "…" : ""
                color: theme.mutedText
            }
            // The count as the model, so that a token arriving updates the blocks in place
            // instead of rebuilding them (and the selection in them).
            Repeater {
                model: message.blocks.length
                ColumnLayout {
                    id: blockItem
                    required property int index
                    readonly property var block: message.blocks[index] || ({})
                    Layout.fillWidth: true
                    spacing: 0
                    TextEdit {
                        objectName: "messageText"
                        Layout.fillWidth: true
                        visible: blockItem.block.kind === "markdown"
                        // Markdown as HTML without raw HTML or images (markdown_html.hpp): the
                        // text is the model's or a conversation file's, and MarkdownText would
                        // render its HTML.
                        text: visible ? blockItem.block.html : ""
                        textFormat: TextEdit.RichText
                        readOnly: true
                        selectByMouse: true
                        wrapMode: TextEdit.Wrap
                        font.pointSize: theme.fontBody
                        color: theme.text
                        selectionColor: theme.selection
                        selectedTextColor: theme.text
                        Accessible.name: (message.isAnswer ? "Answer: " : "Your message: ") + message.text
                    }
                    CodeBlock {
                        Layout.fillWidth: true
                        visible: blockItem.block.kind === "code"
                        code: visible ? blockItem.block.code : ""
                        language: visible ? blockItem.block.language : ""
                    }
                }
            }
        }
    }

    ColumnLayout {
        Layout.fillWidth: true
        visible: message.editing
        TextBox {
            id: editor
            objectName: "messageEditor"
            Layout.fillWidth: true
            wrapMode: TextArea.Wrap
            Accessible.name: "Edited message"
            // Enter or Ctrl+Enter sends the edit, Shift+Enter is a new line, Esc cancels. The window's
            // Ctrl+Enter and Esc shortcuts (send the prompt, stop) must not take these keys here.
            Keys.onShortcutOverride: function(event) {
                event.accepted = event.key === Qt.Key_Escape
                        || ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter) && (event.modifiers & Qt.ControlModifier))
            }
            Keys.onReturnPressed: function(event) {
                if (event.modifiers & Qt.ShiftModifier) event.accepted = false
                else message.saveEdit()
            }
            Keys.onEnterPressed: function(event) {
                if (event.modifiers & Qt.ShiftModifier) event.accepted = false
                else message.saveEdit()
            }
            Keys.onEscapePressed: message.cancelEdit()
        }
        RowLayout {
            Button {
                objectName: "sendEditedButton"
                text: "Send edited"
                highlighted: true
                Accessible.name: "Send the edited message"
                ToolTip.visible: hovered
                ToolTip.text: "Enter or Ctrl+Enter (Shift+Enter: new line)"
                onClicked: message.saveEdit()
            }
            Button {
                text: "Cancel"
                Accessible.name: "Cancel editing"
                ToolTip.visible: hovered
                ToolTip.text: "Esc"
                onClicked: message.cancelEdit()
            }
        }
    }

    Label {
        visible: message.error.length > 0
        Layout.fillWidth: true
        Layout.leftMargin: message.isAnswer ? 32 : 0
        wrapMode: Text.Wrap
        color: theme.error
        textFormat: Text.PlainText
        text: "The answer failed: " + message.error
    }

    // Memories the answer went without (the knowledge server did not answer): never silent.
    Label {
        objectName: "kbNotice"
        visible: message.isAnswer && message.notice.length > 0
        Layout.fillWidth: true
        Layout.leftMargin: 32
        wrapMode: Text.Wrap
        color: theme.warning
        textFormat: Text.PlainText
        text: "⚠ " + message.notice
        Accessible.name: "Notice: " + message.notice
    }

    ReferencesPanel {
        Layout.fillWidth: true
        Layout.leftMargin: 32
        visible: message.isAnswer && message.referenceCount > 0
        references: message.references
    }

    Label {
        objectName: "measurements"
        visible: message.isAnswer && !message.streaming && message.tokens > 0
        Layout.leftMargin: 32
        color: theme.mutedText
        font.pointSize: theme.fontSmall
        textFormat: Text.PlainText  // the device's name
        // One token has no decode rate (no time after the first token): none is shown then.
        text: message.tokens + (message.tokens === 1 ? " token · " : " tokens · ")
              + (message.tokens > 1 ? message.tokensPerSecond.toFixed(1) + " tokens/s · " : "") + "first token " + message.firstTokenMs.toFixed(0) + " ms · " + message.device
              + (message.seed >= 0 ? " · seed " + message.seed : "")
              + (message.droppedMessages > 0 ? " · oldest " + message.droppedMessages
                 + (message.droppedMessages === 1 ? " message" : " messages") + " left out to fit the context" : "")
              + (message.finish.length > 0 && message.finish !== "end of turn" ? " · " + message.finish : "")
    }
    Label {
        visible: message.isAnswer && !message.streaming && message.tokens === 0 && message.finish === "stopped"
        Layout.leftMargin: 32
        color: theme.mutedText
        font.pointSize: theme.fontSmall
        text: "stopped"
    }
}
