// The saved conversations: search, new, open, rename, delete.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Pane {
    id: pane
    padding: 6
    function focusSearch() { search.forceActiveFocus() }

    ColumnLayout {
        anchors.fill: parent
        spacing: 6

        Button {
            Layout.fillWidth: true
            text: "New conversation"
            Accessible.name: "New conversation"
            ToolTip.visible: hovered
            ToolTip.text: "Start a new conversation (Ctrl+N)"
            onClicked: chat.newConversation()
        }
        TextField {
            id: search
            Layout.fillWidth: true
            placeholderText: "Search conversations"
            Accessible.name: "Search conversations"
            onTextChanged: chat.conversations.filter = text
        }
        ListView {
            id: list
            objectName: "conversationList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: chat.conversations
            ScrollBar.vertical: ScrollBar {}
            delegate: ItemDelegate {
                id: row
                required property string conversationId
                required property string title
                required property string updated
                width: ListView.view.width
                highlighted: conversationId === chat.conversationId
                Accessible.name: "Conversation " + title
                contentItem: ColumnLayout {
                    spacing: 0
                    Label { text: row.title; textFormat: Text.PlainText; elide: Text.ElideRight; Layout.fillWidth: true; font.bold: row.highlighted }
                    Label { text: row.updated; font.pointSize: 8; opacity: 0.7 }
                }
                onClicked: chat.openConversation(conversationId)
                TapHandler {
                    acceptedButtons: Qt.RightButton
                    onTapped: rowMenu.popup()
                }
                Menu {
                    id: rowMenu
                    MenuItem { text: "Rename…"; onTriggered: renameDialog.openFor(row.conversationId, row.title) }
                    MenuItem { text: "Delete"; onTriggered: chat.deleteConversation(row.conversationId) }
                }
            }
            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: search.text.length > 0 ? "No conversation matches" : "No saved conversations"
                opacity: 0.7
            }
        }
    }

    Dialog {
        id: renameDialog
        property string conversationId: ""
        function openFor(id, title) { conversationId = id; nameField.text = title; open(); nameField.forceActiveFocus() }
        title: "Rename the conversation"
        modal: true
        anchors.centerIn: Overlay.overlay
        standardButtons: Dialog.Ok | Dialog.Cancel
        TextField { id: nameField; width: 320; Accessible.name: "Conversation title" }
        onAccepted: chat.renameConversation(conversationId, nameField.text)
    }
}
