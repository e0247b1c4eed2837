// A folder or a file to open, or a file to save, typed or browsed: a text field for the path (Enter
// opens or saves) and a "Browse…" button for Qt's dialog. The field is there because Qt Quick's own folder dialog opens
// a folder only once you have gone up and selected it, and takes a typed path only after an
// unshown Ctrl+L.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import QtQuick.Dialogs

Dialog {
    id: dialog
    property bool folder: true
    property bool save: false  // a file to write: a Save button, and Browse… asks for a new file
    property var nameFilters: ["All files (*)"]
    property string placeholder: ""
    property alias path: pathField.text
    signal chosen(string path)

    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(640, Overlay.overlay ? Overlay.overlay.width - 40 : 640)
    standardButtons: (save ? Dialog.Save : Dialog.Open) | Dialog.Cancel
    onOpened: { pathField.forceActiveFocus(); pathField.selectAll() }
    onAccepted: if (pathField.text.trim().length > 0) dialog.chosen(pathField.text.trim())
    Component.onCompleted: standardButton(save ? Dialog.Save : Dialog.Open).enabled = Qt.binding(function() { return pathField.text.trim().length > 0 })

    // A file: URL from Qt's dialog as the local path a person reads and types.
    function localPath(url) {
        const s = url.toString()
        return s.startsWith("file://") ? decodeURIComponent(s.substring(7)) : s
    }
    // Where Browse… starts: the typed folder, or the typed file's folder.
    function startFolder() {
        let p = pathField.text.trim()
        if (!dialog.folder) p = p.substring(0, p.lastIndexOf("/"))
        return p.length > 0 ? "file://" + p : ""
    }

    ColumnLayout {
        anchors.fill: parent
        spacing: theme.spacing
        Label {
            Layout.fillWidth: true
            text: dialog.folder ? "Type the folder's path, or browse to it:" : "Type the file's path, or browse to it:"
            color: theme.mutedText
            wrapMode: Text.Wrap
        }
        RowLayout {
            Layout.fillWidth: true
            spacing: theme.spacing
            TextField {
                id: pathField
                objectName: "pathField"
                Layout.fillWidth: true
                placeholderText: dialog.placeholder
                selectByMouse: true
                Accessible.name: dialog.folder ? "Folder path" : "File path"
                onAccepted: if (text.trim().length > 0) dialog.accept()
            }
            Button {
                objectName: "browseButton"
                text: "Browse…"
                Accessible.name: "Browse for the " + (dialog.folder ? "folder" : "file")
                onClicked: {
                    if (dialog.folder) {
                        folderPicker.open()
                        return
                    }
                    // Saving: Qt's dialog starts with the typed file's name in its name field.
                    const p = pathField.text.trim()
                    if (dialog.save && p.length > 0 && !p.endsWith("/")) filePicker.selectedFile = "file://" + encodeURI(p)
                    filePicker.open()
                }
            }
        }
    }

    FolderDialog {
        id: folderPicker
        objectName: "folderPicker"
        title: dialog.title
        currentFolder: dialog.startFolder()
        // Open the folder the dialog shows when none in it is selected (Qt's dialog leaves Open
        // disabled then: the folder you browsed into could not be chosen).
        onCurrentFolderChanged: if (selectedFolder.toString().length === 0 || !visible) selectedFolder = currentFolder
        onAccepted: pathField.text = dialog.localPath(selectedFolder.toString().length > 0 ? selectedFolder : currentFolder)
    }
    FileDialog {
        id: filePicker
        objectName: "filePicker"
        title: dialog.title
        nameFilters: dialog.nameFilters
        currentFolder: dialog.startFolder()
        fileMode: dialog.save ? FileDialog.SaveFile : FileDialog.OpenFile
        acceptLabel: dialog.save ? "Save" : "Open"
        onAccepted: pathField.text = dialog.localPath(selectedFile)
    }
}
