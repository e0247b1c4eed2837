// The last thing the app has to say: a model loaded, a device switched, a warning (the chat goes
// on, with less), or an error with its reason. Its severity picks the colour; the technical detail
// behind it (a server's own error text) is in the tooltip.
import QtQuick
import QtQuick.Controls

Label {
    objectName: "statusLine"
    visible: chat.status.length > 0
    text: chat.status
    textFormat: Text.PlainText  // reasons name files, servers and devices: outside text
    wrapMode: Text.Wrap
    padding: 6
    leftPadding: theme.spacing
    readonly property color severityColour: chat.statusSeverity === "error" ? theme.error
                                           : chat.statusSeverity === "warning" ? theme.warning : theme.mutedText
    color: chat.statusSeverity === "info" ? theme.text : severityColour
    // A warning or an error stands out by a tint and a bar of its colour; news is plain.
    background: Rectangle {
        color: chat.statusSeverity === "info" ? "transparent"
                                              : Qt.rgba(severityColour.r, severityColour.g, severityColour.b, 0.10)
        Rectangle { width: 3; height: parent.height; color: severityColour; visible: chat.statusSeverity !== "info" }
    }
    Accessible.name: (chat.statusSeverity === "error" ? "Error: " : chat.statusSeverity === "warning" ? "Warning: " : "Status: ") + chat.status
    Accessible.description: chat.statusDetails
    rightPadding: dropOldest.visible ? dropOldest.width + 12 : padding

    // The conversation outgrew the context: LM Studio's way out, one click.
    Button {
        id: dropOldest
        objectName: "dropOldestButton"
        visible: chat.contextOverflow
        anchors.right: parent.right
        anchors.rightMargin: 6
        anchors.verticalCenter: parent.verticalCenter
        text: "Drop oldest messages and continue"
        focusPolicy: Qt.NoFocus
        Accessible.name: "Drop the oldest messages and answer again"
        ToolTip.visible: hovered
        ToolTip.text: "From now on the oldest messages of a conversation longer than the context are left out (Settings); the system prompt stays"
        onClicked: chat.dropOldestAndContinue()
    }

    HoverHandler { id: hover }
    PlainToolTip {
        objectName: "statusDetails"
        visible: hover.hovered && chat.statusDetails.length > 0
        text: chat.statusDetails
    }
}
