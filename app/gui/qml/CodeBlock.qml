// One fenced code block of a message: a framed panel with its language, its own Copy button and
// the code in monospace with syntax colours (highlighted in C++: theme.codeHtml, escaped HTML —
// the code is the model's text, never markup). Long lines scroll sideways instead of wrapping.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Rectangle {
    id: block
    property string code: ""
    property string language: ""
    implicitHeight: column.implicitHeight + 2
    radius: theme.radius - 2
    color: theme.codeBackground
    border.color: theme.border
    clip: true

    ColumnLayout {
        id: column
        x: 1
        y: 1
        width: parent.width - 2
        spacing: 0

        Rectangle {
            Layout.fillWidth: true
            implicitHeight: header.implicitHeight + 4
            color: theme.codeHeader
            radius: block.radius
            // Square bottom corners: the header sits on the code.
            Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: parent.radius; color: parent.color }
            RowLayout {
                id: header
                anchors.fill: parent
                anchors.leftMargin: theme.spacing + 2
                anchors.rightMargin: theme.spacingSmall
                Label {
                    objectName: "codeLanguage"
                    text: theme.languageLabel(block.language)
                    textFormat: Text.PlainText  // the fence's info string: the model's text
                    font.pointSize: theme.fontSmall
                    color: theme.mutedText
                    elide: Text.ElideRight
                    Layout.fillWidth: true
                }
                ToolButton {
                    objectName: "copyCodeButton"
                    text: copied.running ? "✓ Copied" : "❐ Copy"
                    font.pointSize: theme.fontSmall
                    focusPolicy: Qt.NoFocus  // typing stays in the prompt
                    Accessible.name: "Copy this code block"
                    onClicked: { chat.copyToClipboard(block.code); copied.restart() }
                    Timer { id: copied; interval: 1500 }
                }
            }
        }

        Flickable {
            id: scroller
            Layout.fillWidth: true
            implicitHeight: codeText.implicitHeight + (hbar.visible ? hbar.height : 0)
            contentWidth: codeText.implicitWidth
            contentHeight: codeText.implicitHeight
            flickableDirection: Flickable.HorizontalFlick
            boundsBehavior: Flickable.StopAtBounds
            clip: true
            ScrollBar.horizontal: ScrollBar { id: hbar; policy: scroller.contentWidth > scroller.width ? ScrollBar.AlwaysOn : ScrollBar.AlwaysOff }
            TextEdit {
                id: codeText
                objectName: "codeText"
                padding: theme.spacing + 2
                text: theme.codeHtml(block.code, block.language, theme.dark)
                textFormat: TextEdit.RichText
                readOnly: true
                selectByMouse: true
                font.family: theme.monoFamily
                font.pointSize: theme.fontBody - 0.5
                color: theme.text
                selectionColor: theme.selection
                selectedTextColor: theme.text
                Accessible.name: "Code: " + block.code
            }
        }
    }
}
