// Where the model's explicit memories come from: a knowledge server (mnemo-kb serve: address,
// token file, CA file) or a local memory folder (mnemo memorize), with the live status the
// controller reports (connected / unreachable with the reason / unauthorised). Every action is a
// call on `chat.kb`; an unreachable server never stops the chat.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs

Dialog {
    id: panel
    objectName: "kbPanel"
    title: "Knowledge"
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(720, Overlay.overlay ? Overlay.overlay.width - 40 : 720)
    standardButtons: Dialog.Close

    // The state's colour: green when memories arrive, amber when they were asked for and do not
    // (a warning, as in the status line: the chat goes on without them).
    function stateColour(state) {
        if (state === "connected" || state === "folder") return theme.success
        if (state === "off") return palette.windowText
        return theme.warning
    }

    FileDialog {
        id: tokenDialog
        title: "The knowledge server's token file"
        onAccepted: tokenField.text = selectedFile
    }
    FileDialog {
        id: caDialog
        title: "PEM certificates that sign the server's certificate"
        onAccepted: caField.text = selectedFile
    }
    FolderDialog {
        id: folderDialog
        title: "A memory folder (made by mnemo memorize)"
        onAccepted: folderField.text = selectedFolder
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8

        Label {
            objectName: "kbStatus"
            Layout.fillWidth: true
            text: "● " + chat.kb.text
            textFormat: Text.PlainText  // the server's address and what it said
            wrapMode: Text.Wrap
            color: panel.stateColour(chat.kb.state)
            Accessible.name: "Knowledge status: " + chat.kb.text
        }
        // What the server or the client said, as it said it: for whoever runs the server.
        Label {
            objectName: "kbDetails"
            Layout.fillWidth: true
            visible: chat.kb.details.length > 0 && chat.kb.state !== "folder"
            text: chat.kb.details
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            opacity: 0.7
            font.pointSize: Qt.application.font.pointSize * 0.9
            Accessible.name: "Knowledge server details: " + chat.kb.details
        }

        GroupBox {
            title: "Knowledge server (mnemo-kb serve)"
            Layout.fillWidth: true
            GridLayout {
                anchors.fill: parent
                columns: 3
                Label { text: "Address" }
                TextField {
                    id: urlField
                    objectName: "kbUrlField"
                    Layout.columnSpan: 2
                    Layout.fillWidth: true
                    text: chat.kb.url
                    placeholderText: "grpcs://HOST:PORT (or grpc://127.0.0.1:PORT on this machine)"
                    Accessible.name: "Knowledge server address"
                }
                Label { text: "Token file" }
                TextField {
                    id: tokenField
                    objectName: "kbTokenField"
                    Layout.fillWidth: true
                    text: chat.kb.tokenFile
                    placeholderText: "the file mnemo-kb token new's token was saved in (none: no token sent)"
                    Accessible.name: "Token file"
                }
                Button { text: "Browse…"; Accessible.name: "Choose the token file"; onClicked: tokenDialog.open() }
                Label { text: "CA file" }
                TextField {
                    id: caField
                    Layout.fillWidth: true
                    text: chat.kb.caFile
                    placeholderText: "PEM roots of the server's certificate (none: the system's)"
                    Accessible.name: "CA certificate file"
                }
                Button { text: "Browse…"; Accessible.name: "Choose the CA file"; onClicked: caDialog.open() }
                Item { Layout.columnSpan: 2; Layout.fillWidth: true }
                Button {
                    objectName: "kbConnectButton"
                    text: "Connect"
                    enabled: chat.model.loaded && !chat.model.loading && urlField.text.trim().length > 0
                    Accessible.name: "Connect to the knowledge server"
                    ToolTip.visible: hovered
                    ToolTip.text: "Reloads the model on the same device with this server's memories"
                    onClicked: chat.kb.connectServer(urlField.text, tokenField.text, caField.text)
                }
            }
        }

        RowLayout {
            Layout.fillWidth: true
            Label { text: "Memory retrieval" }
            ComboBox {
                objectName: "retrievalBox"
                model: ["bm25", "vector"]
                currentIndex: chat.kb.retrieval === "vector" ? 1 : 0
                Accessible.name: "How chunks find memories"
                onActivated: chat.kb.retrieval = currentText
            }
            Label {
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                opacity: 0.7
                text: "Used at the next connection or memory folder, and kept for this model. Vector retrieval needs trained retrieval vectors (the default model has none)."
            }
        }

        GroupBox {
            title: "Or a memory folder on this machine (mnemo memorize)"
            Layout.fillWidth: true
            RowLayout {
                anchors.fill: parent
                TextField {
                    id: folderField
                    Layout.fillWidth: true
                    text: chat.kb.memoryFolder
                    placeholderText: "a folder made by mnemo memorize for this model"
                    Accessible.name: "Memory folder"
                }
                Button { text: "Browse…"; Accessible.name: "Choose the memory folder"; onClicked: folderDialog.open() }
                Button {
                    text: "Use"
                    enabled: chat.model.loaded && !chat.model.loading && folderField.text.trim().length > 0
                    Accessible.name: "Use the memory folder"
                    onClicked: chat.kb.useMemoryFolder(folderField.text)
                }
            }
        }

        RowLayout {
            Layout.fillWidth: true
            Label {
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                opacity: 0.7
                text: "When the server does not answer, the chat goes on without memories and each answer says so."
            }
            Button {
                objectName: "documentsButton"
                text: "Documents…"
                enabled: chat.model.loaded
                Accessible.name: "Add, replace or delete documents"
                ToolTip.visible: hovered
                ToolTip.text: "Teach the model documents: into its memory folder or its knowledge server"
                onClicked: documentsPanel.open()
            }
            Button {
                text: "No memories"
                enabled: chat.model.loaded && !chat.model.loading && chat.kb.state !== "off"
                Accessible.name: "Answer without memories"
                onClicked: chat.kb.useNoMemories()
            }
        }
    }

    // Opened from the button above, or by a reference's document link (chat.kb.documents.showDocument),
    // also while this panel is closed: so it is parented where this panel is, in the window.
    DocumentsPanel {
        id: documentsPanel
        parent: panel.parent
    }
    // Knowledge → Add documents… from the keyboard (Main.qml's Ctrl+Shift+A).
    function openDocuments() { documentsPanel.openForPath() }
}
