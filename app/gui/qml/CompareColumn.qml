// One backend's column in the compare view: its figures, the time per op category as bars
// (scaled to the longest of any column), and its greedy answer; or why it could not run.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Frame {
    id: column
    required property string spec
    required property string deviceName
    required property bool ok
    required property string error
    required property bool reference
    required property string tokensPerSecond
    required property string promptTokensPerSecond
    required property bool opTimesKnown
    required property var opTimes
    required property string peakMemory
    required property string maxAbsDlogit
    required property string divergence
    required property string answer
    property double maxOpMs: 0

    ColumnLayout {
        anchors.fill: parent
        spacing: 4

        Label {
            Layout.fillWidth: true
            text: column.spec + (column.reference ? "  (reference)" : "")
            textFormat: Text.PlainText
            font.bold: true
        }
        Label {
            Layout.fillWidth: true
            text: column.deviceName
            textFormat: Text.PlainText
            elide: Text.ElideRight
            opacity: 0.7
        }
        Label {
            objectName: "compareError"
            Layout.fillWidth: true
            visible: !column.ok
            text: "Could not run: " + column.error
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            color: "#c62828"
        }
        GridLayout {
            visible: column.ok
            columns: 2
            columnSpacing: 8
            Label { text: "Generation"; opacity: 0.7 }
            Label { objectName: "compareSpeed"; text: column.tokensPerSecond; font.bold: true }
            Label { text: "Prompt"; opacity: 0.7 }
            Label { text: column.promptTokensPerSecond }
            Label { text: "Peak memory"; opacity: 0.7 }
            Label { text: column.peakMemory }
            Label { text: "Max |Δlogit|"; opacity: 0.7 }
            Label { objectName: "compareDlogit"; text: column.maxAbsDlogit }
            Label { text: "First divergence"; opacity: 0.7 }
            Label {
                Layout.fillWidth: true
                Layout.maximumWidth: column.width - 140
                text: column.divergence  // holds the model's tokens
                textFormat: Text.PlainText
                wrapMode: Text.Wrap
            }
        }

        Label {
            visible: column.ok
            text: column.opTimesKnown ? "Time per op category" : "Time per op category: this backend gives no per-op timings"
            opacity: 0.7
            font.pointSize: 9
        }
        // The bar chart: one bar per op category, its length the time over the longest bar of all columns.
        Repeater {
            model: column.ok && column.opTimesKnown ? column.opTimes : []
            RowLayout {
                required property var modelData
                Layout.fillWidth: true
                spacing: 4
                Label {
                    text: modelData.category
                    Layout.preferredWidth: 100
                    font.pointSize: 9
                }
                Rectangle {
                    Layout.preferredHeight: 12
                    Layout.preferredWidth: Math.max(1, (column.width - 210) * (column.maxOpMs > 0 ? modelData.ms / column.maxOpMs : 0))
                    color: palette.highlight
                    Accessible.role: Accessible.Indicator
                    Accessible.name: modelData.category + " " + modelData.text
                }
                Label {
                    text: modelData.text
                    font.pointSize: 8
                }
            }
        }

        Label {
            visible: column.ok
            text: "Answer (greedy)"
            opacity: 0.7
            font.pointSize: 9
        }
        Label {
            Layout.fillWidth: true
            Layout.fillHeight: true
            visible: column.ok
            text: column.answer  // the model's text
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            elide: Text.ElideRight
            verticalAlignment: Text.AlignTop
        }
    }
}
