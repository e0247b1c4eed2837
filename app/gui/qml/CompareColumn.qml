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
    required property string stepsText  // where the steps ended, and over which steps it was compared
    property double maxOpMs: 0
    // A card: a surface of its own with a rounded border, the reference backend's in the accent.
    padding: theme.spacing + 4
    background: Rectangle {
        color: theme.surface
        radius: theme.radius
        border.color: column.reference ? theme.accent : theme.border
        border.width: 1
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 4

        Label {
            Layout.fillWidth: true
            text: column.spec + (column.reference ? "  (reference)" : "")
            textFormat: Text.PlainText
            font.bold: true
            font.pointSize: theme.fontTitle
            color: theme.text
        }
        Label {
            Layout.fillWidth: true
            text: column.deviceName
            textFormat: Text.PlainText
            elide: Text.ElideRight
            color: theme.mutedText
            font.pointSize: theme.fontSmall
        }
        Label {
            objectName: "compareError"
            Layout.fillWidth: true
            visible: !column.ok
            text: "Could not run: " + column.error
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            color: theme.error
        }
        GridLayout {
            visible: column.ok
            columns: 2
            columnSpacing: 8
            Label { text: "Generation"; color: theme.mutedText }
            Label { objectName: "compareSpeed"; text: column.tokensPerSecond; font.bold: true }
            Label { text: "Prompt"; color: theme.mutedText }
            Label { text: column.promptTokensPerSecond }
            Label { text: "Peak memory"; color: theme.mutedText }
            Label { text: column.peakMemory }
            Label { text: "Max |Δlogit|"; color: theme.mutedText }
            Label { objectName: "compareDlogit"; text: column.maxAbsDlogit }
            Label { text: "First divergence"; color: theme.mutedText }
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
            objectName: "compareSteps"
            Layout.fillWidth: true
            visible: column.ok
            text: "Answer (greedy) · " + column.stepsText
            wrapMode: Text.Wrap
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
