// The last thing the app has to say: a model loaded, a device switched, or an error with its reason.
import QtQuick
import QtQuick.Controls

Label {
    objectName: "statusLine"
    visible: chat.status.length > 0
    text: chat.status
    textFormat: Text.PlainText  // reasons name files, servers and devices: outside text
    wrapMode: Text.Wrap
    padding: 6
    color: chat.statusIsError ? "#c62828" : palette.windowText
    Accessible.name: (chat.statusIsError ? "Error: " : "Status: ") + chat.status
}
