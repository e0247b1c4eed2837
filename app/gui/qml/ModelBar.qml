// The top bar: the loaded model's facts, the device picker, and the buttons for model, memories,
// settings, export and the views that are not written yet.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

ToolBar {
    id: bar
    signal openModel()
    signal openMemories()
    signal openSettings()
    signal openCompare()
    signal openKnowledge()
    signal exportAs(string format)

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: 4
        spacing: 2

        RowLayout {
            Layout.fillWidth: true
            ToolButton {
                text: "Model ▾"
                Accessible.name: "Open a model"
                ToolTip.visible: hovered
                ToolTip.text: "Open a model folder (Ctrl+O) or a recent one"
                onClicked: modelMenu.open()
                Menu {
                    id: modelMenu
                    objectName: "modelMenu"
                    width: 480
                    MenuItem { text: "Open a model folder…"; onTriggered: bar.openModel() }
                    MenuSeparator { visible: chat.recentModels.length > 0 }
                    // The recent model folders, after the separator.
                    Instantiator {
                        model: chat.recentModels
                        delegate: MenuItem {
                            required property string modelData
                            text: modelData
                            Accessible.name: "Open the recent model " + modelData
                            onTriggered: chat.loadModel(modelData)
                        }
                        onObjectAdded: function(index, object) { modelMenu.insertItem(index + 2, object) }
                        onObjectRemoved: function(index, object) { modelMenu.removeItem(object) }
                    }
                }
            }
            Label { text: "Device:" }
            ComboBox {
                id: deviceBox
                objectName: "devicePicker"
                Layout.preferredWidth: 300
                model: chat.devices
                textRole: "label"
                popup.width: Math.max(width, 620)  // room for each device's details
                enabled: !chat.loading
                Accessible.name: "Device"
                ToolTip.visible: hovered
                ToolTip.text: chat.autoText.length > 0 ? chat.autoText
                              : currentIndex >= 0 ? "Runs the model on this device; choosing another reloads it there and keeps the conversation" : ""
                delegate: ItemDelegate {
                    required property int index
                    required property var model
                    width: deviceBox.popup.width
                    enabled: model.enabled
                    text: model.label + "  —  " + model.detail
                    highlighted: deviceBox.highlightedIndex === index
                    Accessible.name: model.label
                    ToolTip.visible: hovered
                    ToolTip.text: model.detail
                }
                onActivated: function(index) { chat.chooseDevice(index) }
                Component.onCompleted: currentIndex = chat.deviceRow
                Connections {
                    target: chat
                    function onModelInfoChanged() { deviceBox.currentIndex = chat.deviceRow }
                }
            }
            BusyIndicator {
                running: chat.loading
                visible: chat.loading
                Layout.preferredHeight: 28
                Layout.preferredWidth: 28
                Accessible.name: "Loading the model"
            }
            Item { Layout.fillWidth: true }
            ToolButton {
                text: "Memories…"
                Accessible.name: "Open a memory folder"
                ToolTip.visible: hovered
                ToolTip.text: "Read explicit memories from a folder made by mnemo memorize (the model must read memories)"
                onClicked: bar.openMemories()
            }
            ToolButton {
                objectName: "knowledgeButton"
                // The state at a glance: a dot coloured as the panel colours it.
                text: (chat.knowledgeState === "off" ? "" : (chat.knowledgeState === "connected" || chat.knowledgeState === "folder" ? "● " : "⚠ "))
                      + "Knowledge…"
                Accessible.name: "Knowledge server and memories: " + chat.knowledgeState
                ToolTip.visible: hovered
                ToolTip.text: chat.knowledgeText
                onClicked: bar.openKnowledge()
            }
            ToolButton {
                objectName: "compareButton"
                text: "Compare"
                enabled: chat.modelLoaded
                Accessible.name: "Compare backends"
                ToolTip.visible: hovered
                ToolTip.text: "Run one prompt on several backends side by side: speed, time per op, memory, logit differences"
                onClicked: bar.openCompare()
            }
            ToolButton {
                text: "Export ▾"
                Accessible.name: "Export the conversation"
                enabled: chat.conversation.count > 0
                onClicked: exportMenu.open()
                Menu {
                    id: exportMenu
                    MenuItem { text: "As Markdown…"; onTriggered: bar.exportAs("markdown") }
                    MenuItem { text: "As JSON…"; onTriggered: bar.exportAs("json") }
                }
            }
            ToolButton {
                text: "Settings"
                Accessible.name: "Settings: system prompt and sampling"
                onClicked: bar.openSettings()
            }
        }
        Label {
            objectName: "autoText"
            Layout.fillWidth: true
            visible: chat.autoText.length > 0
            text: chat.autoText
            elide: Text.ElideRight
            font.pointSize: 9
            Accessible.name: chat.autoText
        }
        Label {
            objectName: "modelInfo"
            Layout.fillWidth: true
            text: chat.modelLine
            elide: Text.ElideRight
            font.pointSize: 9
            Accessible.name: "Model: " + chat.modelLine
            ToolTip.visible: infoHover.hovered
            ToolTip.text: chat.modelDetails
            HoverHandler { id: infoHover }
        }
    }
}
