// Files the app could not use (a conversation it refused or kept aside, a settings file it could
// not read), each named with the reason, until dismissed: unlike the status line, the first model
// load does not overwrite them.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Frame {
    id: bar
    objectName: "noticeBar"
    visible: chat.notices.length > 0
    padding: 6

    RowLayout {
        anchors.fill: parent
        Label {
            objectName: "noticesText"
            Layout.fillWidth: true
            text: chat.notices.join("\n")
            textFormat: Text.PlainText  // file names and what the engine said about them
            wrapMode: Text.Wrap
            color: theme.warning
            Accessible.name: "Notices: " + chat.notices.join("; ")
        }
        Button {
            text: "Dismiss"
            Accessible.name: "Dismiss the notices"
            onClicked: chat.dismissNotices()
        }
    }
}
