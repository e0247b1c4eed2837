// What the last answer measured (tokens/s, time to first token, context used, memory in use), or
// what the answer streaming now has done so far: one muted line at the foot of the chat.
import QtQuick
import QtQuick.Controls

Rectangle {
    implicitHeight: strip.implicitHeight + 2 * theme.spacingSmall
    color: theme.sidebar
    Rectangle { width: parent.width; height: 1; color: theme.border }
    Label {
        id: strip
        objectName: "performanceStrip"
        x: theme.spacing
        width: parent.width - 2 * theme.spacing
        anchors.verticalCenter: parent.verticalCenter
        text: chat.performance
        textFormat: Text.PlainText  // device names are outside text
        elide: Text.ElideRight
        font.pointSize: theme.fontSmall
        color: theme.mutedText
        Accessible.name: "Performance: " + chat.performance
    }
}
