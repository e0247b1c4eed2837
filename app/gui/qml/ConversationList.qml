// The saved conversations: search, new, open, rename, delete.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Pane {
    id: pane
    padding: theme.spacing
    background: Rectangle {
        color: theme.sidebar
        Rectangle { anchors.right: parent.right; width: 1; height: parent.height; color: theme.border }
    }
    function focusSearch() { search.forceActiveFocus() }

    ColumnLayout {
        anchors.fill: parent
        spacing: 6

        Button {
            Layout.fillWidth: true
            text: "+  New conversation"
            // The primary action: the accent colour.
            palette.button: enabled ? theme.accent : theme.surface
            palette.buttonText: enabled ? theme.accentText : theme.mutedText
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
                // The open one on a tinted card with an accent bar, not a solid highlight.
                background: Rectangle {
                    radius: theme.radius - 2
                    color: row.highlighted ? theme.userBubble : row.hovered ? theme.hover : "transparent"
                    Rectangle { visible: row.highlighted; x: 0; y: 6; width: 3; height: parent.height - 12; radius: 1; color: theme.accent }
                }
                contentItem: ColumnLayout {
                    spacing: 1
                    Label { text: row.title; textFormat: Text.PlainText; elide: Text.ElideRight; Layout.fillWidth: true; color: theme.text; font.weight: row.highlighted ? Font.DemiBold : Font.Normal }
                    Label { text: row.updated; font.pointSize: theme.fontSmall; color: theme.mutedText }
                }
                onClicked: chat.openConversation(conversationId)
                TapHandler {
                    acceptedButtons: Qt.RightButton
                    onTapped: rowMenu.popup()
                }
                Menu {
                    id: rowMenu
                    MenuItem { text: "Rename…"; onTriggered: renameDialog.openFor(row.conversationId, row.title) }
                    MenuItem { text: "Delete…"; onTriggered: deleteDialog.openFor(row.conversationId, row.title) }
                }
            }
            Label {
                anchors.centerIn: parent
                visible: list.count === 0
                text: search.text.length > 0 ? "No conversation matches" : "No saved conversations"
                opacity: 0.7
            }
        }

        // The conversation deleted last can be brought back for a few seconds (chat.deletion:
        // its file is only set aside meanwhile).
        RowLayout {
            objectName: "undoDeleteBar"
            Layout.fillWidth: true
            visible: chat.deletion.pending
            Label {
                Layout.fillWidth: true
                text: "Deleted “" + chat.deletion.title + "”"
                textFormat: Text.PlainText  // a title: outside text
                elide: Text.ElideRight
                font.pointSize: theme.fontSmall
                color: theme.mutedText
            }
            Button {
                objectName: "undoDeleteButton"
                text: "Undo"
                Accessible.name: "Undo deleting the conversation"
                onClicked: chat.undoDelete()
            }
        }
    }

    // Deleting asks first; it can still be undone for a few seconds after.
    Dialog {
        id: deleteDialog
        objectName: "deleteDialog"
        property string conversationId: ""
        property string conversationTitle: ""
        function openFor(id, title) { conversationId = id; conversationTitle = title; open() }
        title: "Delete the conversation?"
        modal: true
        anchors.centerIn: Overlay.overlay
        width: Math.min(420, Overlay.overlay ? Overlay.overlay.width - 40 : 420)
        standardButtons: Dialog.Ok | Dialog.Cancel
        Component.onCompleted: standardButton(Dialog.Ok).text = "Delete"
        Label {
            width: parent.width
            wrapMode: Text.Wrap
            textFormat: Text.PlainText
            text: "“" + deleteDialog.conversationTitle + "” and its answers will be deleted. You can undo it for 10 seconds."
        }
        onAccepted: chat.deleteConversation(conversationId)
    }

    Dialog {
        id: renameDialog
        objectName: "renameDialog"
        property string conversationId: ""
        function openFor(id, title) { conversationId = id; nameField.text = title; open(); nameField.forceActiveFocus() }
        title: "Rename the conversation"
        modal: true
        anchors.centerIn: Overlay.overlay
        standardButtons: Dialog.Ok | Dialog.Cancel
        // The field fills the dialog's content (a fixed width stuck out of it): the dialog is as
        // wide as 360 pixels of field, or the window less a margin.
        width: Math.min(420, Overlay.overlay ? Overlay.overlay.width - 40 : 420)
        TextField {
            id: nameField
            objectName: "renameField"
            width: parent.width
            selectByMouse: true
            Accessible.name: "Conversation title"
            onAccepted: renameDialog.accept()  // Enter renames
        }
        onAccepted: chat.renameConversation(conversationId, nameField.text)
    }
}
