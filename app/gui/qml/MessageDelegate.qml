// One message: who said it, the text as Markdown, and its actions (copy, copy a code block,
// edit a prompt, regenerate the last answer); under an answer, its references and measurements.
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
    property bool isLast: false
    readonly property bool isAnswer: role === "assistant"
    property bool editing: false
    spacing: 2

    RowLayout {
        Layout.fillWidth: true
        Label {
            text: message.isAnswer ? "Mnemo" : "You"
            font.bold: true
        }
        Label {
            visible: message.streaming
            text: "answering…"
            opacity: 0.7
        }
        Item { Layout.fillWidth: true }
        ToolButton {
            text: "Copy"
            visible: !message.editing
            Accessible.name: "Copy this message"
            onClicked: chat.copyToClipboard(message.text)
        }
        Repeater {
            model: message.streaming ? [] : chat.codeBlocks(message.text)
            ToolButton {
                required property int index
                required property string modelData
                text: "Copy code " + (index + 1)
                Accessible.name: "Copy code block " + (index + 1)
                onClicked: chat.copyToClipboard(modelData)
            }
        }
        ToolButton {
            objectName: "editButton"
            text: "Edit"
            visible: !message.isAnswer && !message.editing
            Accessible.name: "Edit this message and continue from it"
            ToolTip.visible: hovered
            ToolTip.text: "Edit this message; the conversation continues from it"
            onClicked: { editor.text = message.text; message.editing = true; editor.forceActiveFocus() }
        }
        ToolButton {
            text: "Regenerate"
            visible: message.isAnswer && message.isLast && !message.streaming
            Accessible.name: "Regenerate this answer"
            ToolTip.visible: hovered
            ToolTip.text: "Answer again (Ctrl+R)"
            onClicked: chat.regenerate()
        }
    }

    TextEdit {
        Layout.fillWidth: true
        visible: !message.editing
        // The Markdown as HTML without raw HTML or images (ConversationModel's html role): the
        // text is the model's or a conversation file's, and MarkdownText would render its HTML.
        text: message.text.length > 0 || !message.streaming ? message.html : "…"
        textFormat: TextEdit.RichText
        readOnly: true
        selectByMouse: true
        wrapMode: TextEdit.Wrap
        color: palette.text
        selectionColor: palette.highlight
        selectedTextColor: palette.highlightedText
        Accessible.name: (message.isAnswer ? "Answer: " : "Your message: ") + message.text
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
        }
        RowLayout {
            Button {
                objectName: "sendEditedButton"
                text: "Send edited"
                Accessible.name: "Send the edited message"
                onClicked: { message.editing = false; chat.editMessage(message.index, editor.text) }
            }
            Button {
                text: "Cancel"
                Accessible.name: "Cancel editing"
                onClicked: message.editing = false
            }
        }
    }

    Label {
        visible: message.error.length > 0
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: "#c62828"
        textFormat: Text.PlainText
        text: "The answer failed: " + message.error
    }

    // Memories the answer went without (the knowledge server did not answer): never silent.
    Label {
        objectName: "kbNotice"
        visible: message.isAnswer && message.notice.length > 0
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: "#b26a00"
        textFormat: Text.PlainText
        text: "⚠ " + message.notice
        Accessible.name: "Notice: " + message.notice
    }

    ReferencesPanel {
        Layout.fillWidth: true
        visible: message.isAnswer && message.referenceCount > 0
        references: message.references
    }

    Label {
        visible: message.isAnswer && !message.streaming && message.tokens > 0
        opacity: 0.7
        font.pointSize: 8
        textFormat: Text.PlainText  // the device's name
        text: message.tokens + " tokens · " + message.tokensPerSecond.toFixed(1) + " tokens/s · first token "
              + message.firstTokenMs.toFixed(0) + " ms · " + message.device
              + (message.finish.length > 0 && message.finish !== "end of turn" ? " · " + message.finish : "")
    }
    Label {
        visible: message.isAnswer && !message.streaming && message.tokens === 0 && message.finish === "stopped"
        opacity: 0.7
        font.pointSize: 8
        text: "stopped"
    }
}
