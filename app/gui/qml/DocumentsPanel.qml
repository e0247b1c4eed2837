// Knowledge → Documents…: add .txt/.md files, a folder of them or a .jsonl file to the memories
// the chat reads (its memory folder, a new one for the model, or its knowledge server), see the
// progress with its rate and time left (Cancel leaves everything as it was), and the documents
// there, each replaceable and deletable. Every action is a call on chat.kb.documents, which does
// the work on a thread of its own.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs

Dialog {
    id: panel
    objectName: "documentsPanel"
    title: "Documents"
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(760, Overlay.overlay ? Overlay.overlay.width - 40 : 760)
    height: Math.min(560, Overlay.overlay ? Overlay.overlay.height - 40 : 560)
    standardButtons: Dialog.Close

    readonly property var docs: chat.kb.documents
    property string replacing: ""  // the doc_id a Replace… file is for

    onOpened: docs.refresh()
    // Opened to add: the path field has the keys, so a path typed and Enter adds it.
    function openForPath() {
        open()
        pathField.forceActiveFocus()
    }
    // A reference's document link opens the panel on that document.
    Connections {
        target: panel.docs
        function onShowRequested(docId) { if (!panel.opened) panel.open() }
        function onHighlightedRowChanged() { if (panel.docs.highlightedRow >= 0) list.positionViewAtIndex(panel.docs.highlightedRow, ListView.Contain) }
    }

    FileDialog {
        id: filesDialog
        title: "Documents to add (.txt, .md, .jsonl)"
        fileMode: FileDialog.OpenFiles
        nameFilters: ["Documents (*.txt *.md *.jsonl)", "All files (*)"]
        onAccepted: panel.docs.add(selectedFiles)
    }
    FolderDialog {
        id: folderDialog
        title: "A folder of .txt and .md documents"
        onAccepted: panel.docs.addPath(selectedFolder)
    }
    FileDialog {
        id: replaceDialog
        title: "The file that replaces the document"
        nameFilters: ["Documents (*.txt *.md *.jsonl)", "All files (*)"]
        onAccepted: panel.docs.replace(panel.replacing, selectedFile)
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: 8

        Label {
            objectName: "documentsWhere"
            Layout.fillWidth: true
            text: panel.docs.where
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            opacity: 0.8
        }

        RowLayout {
            Layout.fillWidth: true
            Button {
                objectName: "addFilesButton"
                text: "Add files…"
                enabled: panel.docs.canChange
                Accessible.name: "Add document files"
                onClicked: filesDialog.open()
            }
            Button {
                objectName: "addFolderButton"
                text: "Add folder…"
                enabled: panel.docs.canChange
                Accessible.name: "Add a folder of documents"
                onClicked: folderDialog.open()
            }
            // Qt 6.4's folder dialog opens a folder only after going up and selecting it: a path
            // typed (or pasted) here is the quick way.
            TextField {
                id: pathField
                objectName: "documentsPathField"
                Layout.fillWidth: true
                placeholderText: "or a path: a .txt/.md file, a folder, a .jsonl file"
                Accessible.name: "Path of documents to add"
                onAccepted: addPathButton.clicked()
            }
            Button {
                id: addPathButton
                text: "Add"
                enabled: panel.docs.canChange && pathField.text.trim().length > 0
                Accessible.name: "Add the documents at the path"
                onClicked: { panel.docs.addPath(pathField.text.trim()); pathField.text = "" }
            }
        }

        RowLayout {
            Layout.fillWidth: true
            visible: panel.docs.adding
            ProgressBar {
                objectName: "documentsProgress"
                Layout.fillWidth: true
                indeterminate: panel.docs.progress < 0
                value: Math.max(0, panel.docs.progress)
                Accessible.name: "Progress of the documents being added"
            }
            Button {
                objectName: "documentsCancel"
                text: "Cancel"
                Accessible.name: "Cancel adding the documents"
                onClicked: panel.docs.cancel()
            }
        }
        Label {
            Layout.fillWidth: true
            visible: panel.docs.adding
            text: panel.docs.progressText
            textFormat: Text.PlainText
            opacity: 0.8
        }
        Label {
            objectName: "documentsMessage"
            Layout.fillWidth: true
            visible: text.length > 0
            text: panel.docs.message
            textFormat: Text.PlainText  // file names and what a server said
            wrapMode: Text.Wrap
            color: panel.docs.messageIsError ? "#c62828" : palette.windowText
        }

        Label {
            text: panel.docs.documents.count === 1 ? "1 document" : panel.docs.documents.count + " documents"
            font.bold: true
        }
        ListView {
            id: list
            objectName: "documentsList"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: panel.docs.documents
            ScrollBar.vertical: ScrollBar {}
            delegate: ItemDelegate {
                required property int index
                required property string docId
                required property string title
                required property string source
                required property string sizeText
                required property bool marked  // the document a reference was clicked for
                width: ListView.view.width
                highlighted: marked
                Accessible.name: "Document " + docId
                contentItem: RowLayout {
                    ColumnLayout {
                        Layout.fillWidth: true
                        spacing: 0
                        Label {
                            Layout.fillWidth: true
                            elide: Text.ElideRight
                            textFormat: Text.PlainText
                            font.bold: true
                            text: title.length > 0 ? title : docId
                        }
                        Label {
                            Layout.fillWidth: true
                            elide: Text.ElideMiddle
                            textFormat: Text.PlainText
                            opacity: 0.7
                            text: docId + (source.length > 0 && source !== docId ? " · " + source : "") + " · " + sizeText
                        }
                    }
                    Button {
                        text: "Replace…"
                        enabled: panel.docs.canChange
                        Accessible.name: "Replace document " + docId
                        onClicked: { panel.replacing = docId; replaceDialog.open() }
                    }
                    Button {
                        text: "Delete"
                        enabled: panel.docs.canChange
                        Accessible.name: "Delete document " + docId
                        onClicked: { deleteConfirm.docId = docId; deleteConfirm.open() }
                    }
                }
            }
        }
    }

    // Deleting memories cannot be undone from here (the document would have to be added again).
    Dialog {
        id: deleteConfirm
        property string docId: ""
        title: "Delete the document?"  // a constant: a dialog's title would render HTML in a doc_id
        modal: true
        anchors.centerIn: Overlay.overlay
        standardButtons: Dialog.Ok | Dialog.Cancel
        Label {
            text: deleteConfirm.docId + "\n\nIts memories are removed; add the file again to bring them back."
            textFormat: Text.PlainText
        }
        onAccepted: panel.docs.remove(docId)
    }
}
