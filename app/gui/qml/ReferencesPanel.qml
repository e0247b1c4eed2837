// "N references" under an answer: the explicit memories it read, per chunk, opened on demand.
// Their text, title and source come from a memory folder or a knowledge server: plain text.
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
        text: (panel.open ? "▾ " : "▸ ") + panel.references.length + (panel.references.length === 1 ? " reference" : " references")
        Accessible.name: (panel.open ? "Hide " : "Show ") + panel.references.length + " references"
        onClicked: panel.open = !panel.open
    }
    Repeater {
        model: panel.open ? panel.references : []
        Frame {
            required property var modelData
            Layout.fillWidth: true
            ColumnLayout {
                anchors.fill: parent
                Label {
                    font.pointSize: 8
                    opacity: 0.75
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
                    text: modelData.title.length > 0 ? modelData.title + ": " + modelData.text : modelData.text
                }
            }
        }
    }
}
