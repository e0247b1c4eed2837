// The device picker's server entry: the address of a running `mnemo serve` (or another
// OpenAI-compatible API) and its API key, typed or from a file, with the state `chat.server`
// reports. Connecting is a call on `chat.server`; on success the chat answers there. A typed key
// stays in memory; only the address and the key file's path are kept.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs

Dialog {
    id: panel
    objectName: "serverPanel"
    title: "Server"
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(680, Overlay.overlay ? Overlay.overlay.width - 40 : 680)
    standardButtons: Dialog.Close

    FileDialog {
        id: keyDialog
        title: "The file holding the server's API key"
        onAccepted: keyFileField.text = selectedFile
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8

        Label {
            objectName: "serverStatus"
            Layout.fillWidth: true
            text: "● " + chat.server.text
            textFormat: Text.PlainText  // the server's address and what it said
            wrapMode: Text.Wrap
            color: chat.server.state === "connected" ? theme.success : chat.server.state === "failed" ? theme.error : palette.windowText
            Accessible.name: "Server status: " + chat.server.text
        }

        GridLayout {
            Layout.fillWidth: true
            columns: 3
            Label { text: "Address" }
            TextField {
                id: urlField
                objectName: "serverUrlField"
                Layout.columnSpan: 2
                Layout.fillWidth: true
                text: chat.server.url
                placeholderText: "http://HOST:PORT/v1 (mnemo serve prints it), or https://…"
                Accessible.name: "Server address"
            }
            Label { text: "API key" }
            TextField {
                id: keyField
                objectName: "serverKeyField"
                Layout.columnSpan: 2
                Layout.fillWidth: true
                echoMode: TextInput.Password
                placeholderText: "typed here (never saved), or from a file below; none if the server needs none"
                Accessible.name: "API key"
            }
            Label { text: "Key file" }
            TextField {
                id: keyFileField
                objectName: "serverKeyFileField"
                Layout.fillWidth: true
                text: chat.server.keyFile
                placeholderText: "a file whose first line is the key"
                Accessible.name: "API key file"
            }
            Button { text: "Browse…"; Accessible.name: "Choose the API key file"; onClicked: keyDialog.open() }
        }

        RowLayout {
            Layout.fillWidth: true
            Label {
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                opacity: 0.7
                text: "The whole conversation and the sampling settings are sent with each question. Choose a device in the picker to answer on this machine again."
            }
            Button {
                objectName: "serverConnectButton"
                text: "Connect"
                enabled: urlField.text.trim().length > 0 && chat.server.state !== "connecting"
                Accessible.name: "Connect to the server"
                onClicked: {
                    chat.server.connectServer(urlField.text, keyField.text, keyFileField.text)
                    keyField.text = ""  // the controller has it; no copy stays in the window
                }
            }
        }
    }
    // Closes by itself once the server answers, so the chat is in view.
    Connections {
        target: chat.server
        function onChanged() { if (chat.server.state === "connected" && panel.opened) panel.close() }
    }
}
