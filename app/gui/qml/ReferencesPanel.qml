// "N references" under an answer: the explicit memories it read, per chunk, opened on demand.
// Their text, title and source come from a memory folder or a knowledge server: plain text. Each
// links to its document (chat.kb.documents: the Documents panel, or the file itself).
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

ColumnLayout {
    id: panel
    property var references: []
    property bool open: false
    spacing: 2

    Button {
        objectName: "referencesToggle"
        flat: true
        // Never keeps the focus: typing goes on in the prompt box, and Enter sends the prompt
        // instead of toggling this list.
        focusPolicy: Qt.NoFocus
        font.pointSize: theme.fontSmall
        palette.buttonText: theme.accent
        text: (panel.open ? "▾ " : "▸ ") + panel.references.length + (panel.references.length === 1 ? " reference" : " references")
        Accessible.name: (panel.open ? "Hide " : "Show ") + panel.references.length + " references"
        onClicked: panel.open = !panel.open
    }
    Repeater {
        model: panel.open ? panel.references : []
        Frame {
            required property var modelData
            Layout.fillWidth: true
            background: Rectangle { color: theme.surface; border.color: theme.border; radius: theme.radius - 2 }
            ColumnLayout {
                anchors.fill: parent
                Label {
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                    font.pointSize: theme.fontSmall
                    color: theme.mutedText
                    textFormat: Text.PlainText  // the source comes from the memory folder or the server
                    text: "chunk " + modelData.chunk + " · memory #" + modelData.id
                          + (modelData.score !== undefined && modelData.score !== null ? " · score " + Number(modelData.score).toFixed(3) : "")
                          + (modelData.source.length > 0 ? " · " + modelData.source : "")
                          + (modelData.docId.length > 0 ? " · doc " + modelData.docId : "")
                          + (modelData.docVersion > 0 ? " v" + modelData.docVersion : "")
                }
                Label {
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    textFormat: Text.PlainText
                    color: theme.text
                    text: modelData.title.length > 0 ? modelData.title + ": " + modelData.text : modelData.text
                }
                // Its document: shown in the Documents panel, and its file opened when the source is
                // a file on this machine. No focus is taken: typing goes on in the prompt box.
                RowLayout {
                    visible: modelData.docId.length > 0
                    spacing: 4
                    Button {
                        objectName: "referenceDocumentLink"
                        flat: true
                        focusPolicy: Qt.NoFocus
                        font.pointSize: theme.fontSmall
                        palette.buttonText: theme.accent
                        text: "Document: " + (modelData.title.length > 0 ? modelData.title : modelData.docId)
                        // The title is outside text: a Button's own label would render HTML in it.
                        contentItem: Label {
                            text: parent.text
                            textFormat: Text.PlainText
                            font: parent.font
                            color: theme.accent
                            elide: Text.ElideRight
                        }
                        Accessible.name: "Show document " + modelData.docId
                        onClicked: chat.kb.documents.showDocument(modelData.docId)
                    }
                    Button {
                        flat: true
                        focusPolicy: Qt.NoFocus
                        font.pointSize: theme.fontSmall
                        palette.buttonText: theme.accent
                        visible: chat.kb.documents.isLocalFile(modelData.source)
                        text: "Open file"
                        Accessible.name: "Open the file " + modelData.source
                        onClicked: chat.kb.documents.openSource(modelData.source)
                    }
                }
            }
        }
    }
}
