// The top bar: the loaded model's facts (or the server's), the device picker (its last entry: a
// server), and the buttons for model, memories, settings, export and the views that are not
// written yet.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

ToolBar {
    id: bar
    // As tall as what it holds (its rows and the model line) plus padding: the model line is never
    // cut by the bar's edge, and the chat starts under it. (The rows used to be anchored with
    // margins the bar's implicit height did not count.)
    padding: theme.spacingSmall + 2
    leftPadding: theme.spacing
    rightPadding: theme.spacing
    implicitHeight: rows.implicitHeight + topPadding + bottomPadding
    background: Rectangle {
        color: theme.sidebar
        Rectangle { anchors.bottom: parent.bottom; width: parent.width; height: 1; color: theme.border }
    }
    signal openModel()
    signal openGguf()
    signal openMemories()
    signal openSettings()
    signal openCompare()
    signal openKb()
    signal openServer()
    signal exportAs(string format)
    // A row of the device picker was chosen (by a click, or the keys): the prompt gets the keys back.
    signal deviceChosen()
    // Ctrl+D: the device list open with the keys in it (arrows, then Enter).
    function openDevicePicker() {
        deviceBox.forceActiveFocus()
        deviceBox.popup.open()
    }

    ColumnLayout {
        id: rows
        anchors.fill: parent
        spacing: 2

        RowLayout {
            Layout.fillWidth: true
            ToolButton {
                text: "▣  Model ▾"
                Accessible.name: "Open a model"
                ToolTip.visible: hovered
                ToolTip.text: "Open a model folder (Ctrl+O), a GGUF file or a recent one"
                onClicked: modelMenu.open()
                Menu {
                    id: modelMenu
                    objectName: "modelMenu"
                    width: 480
                    MenuItem { text: "Open a model folder…"; onTriggered: bar.openModel() }
                    MenuItem { text: "Open a GGUF file…"; onTriggered: bar.openGguf() }
                    MenuSeparator { visible: chat.model.recentModels.length > 0 }
                    // The recent models, after the two items and the separator.
                    Instantiator {
                        model: chat.model.recentModels
                        delegate: MenuItem {
                            id: recentItem
                            required property string modelData
                            text: modelData
                            // A folder's name is outside text: plain, never HTML.
                            contentItem: Text {
                                text: recentItem.text
                                textFormat: Text.PlainText
                                font: recentItem.font
                                color: recentItem.highlighted ? recentItem.palette.highlightedText : recentItem.palette.windowText
                                elide: Text.ElideMiddle
                                verticalAlignment: Text.AlignVCenter
                            }
                            Accessible.name: "Open the recent model " + modelData
                            onTriggered: chat.model.loadModel(modelData)
                        }
                        onObjectAdded: function(index, object) { modelMenu.insertItem(index + 3, object) }
                        onObjectRemoved: function(index, object) { modelMenu.removeItem(object) }
                    }
                }
            }
            Label { text: "Device"; color: theme.mutedText }
            ComboBox {
                id: deviceBox
                objectName: "devicePicker"
                Layout.preferredWidth: 300
                model: chat.devices
                textRole: "label"
                popup.width: Math.max(width, 620)  // room for each device's details
                enabled: !chat.model.loading
                Accessible.name: "Device"
                PlainToolTip {
                    visible: deviceBox.hovered && text.length > 0
                    text: chat.fastestDevice.text.length > 0 ? chat.fastestDevice.text
                          : deviceBox.currentIndex >= 0 ? "Runs the model on this device; choosing another reloads it there and keeps the conversation" : ""
                }
                // Device names and details come from the drivers: plain text.
                delegate: ItemDelegate {
                    id: deviceRow
                    required property int index
                    required property var model
                    width: deviceBox.popup.width
                    enabled: model.enabled
                    text: model.label + "  —  " + model.detail
                    contentItem: Text {
                        text: deviceRow.text
                        textFormat: Text.PlainText
                        font: deviceRow.font
                        color: deviceRow.highlighted ? deviceRow.palette.highlightedText : deviceRow.palette.windowText
                        opacity: deviceRow.enabled ? 1 : 0.5
                        elide: Text.ElideRight
                        verticalAlignment: Text.AlignVCenter
                    }
                    highlighted: deviceBox.highlightedIndex === index
                    Accessible.name: model.label
                    PlainToolTip {
                        visible: deviceRow.hovered
                        text: deviceRow.model.detail
                    }
                }
                onActivated: function(index) {
                    chat.model.chooseDevice(index)
                    bar.deviceChosen()
                }
                Component.onCompleted: currentIndex = chat.model.deviceRow
                Connections {
                    target: chat.model
                    function onInfoChanged() { deviceBox.currentIndex = chat.model.deviceRow }
                    function onServerAsked() { bar.openServer() }
                }
            }
            BusyIndicator {
                running: chat.model.loading
                visible: chat.model.loading
                Layout.preferredHeight: 28
                Layout.preferredWidth: 28
                Accessible.name: "Loading the model"
            }
            Item { Layout.fillWidth: true }
            ToolButton {
                text: "⛁  Memories…"
                Accessible.name: "Open a memory folder"
                ToolTip.visible: hovered
                ToolTip.text: "Read explicit memories from a folder made by mnemo memorize (the model must read memories)"
                onClicked: bar.openMemories()
            }
            ToolButton {
                objectName: "kbButton"
                // The state at a glance: a dot coloured as the panel colours it.
                text: (chat.kb.state === "off" ? "◉  " : (chat.kb.state === "connected" || chat.kb.state === "folder" ? "●  " : "⚠  "))
                      + "Knowledge…"
                Accessible.name: "Knowledge server and memories: " + chat.kb.state
                PlainToolTip {
                    visible: parent.hovered
                    text: chat.kb.text + (chat.kb.details.length > 0 ? "\n\n" + chat.kb.details : "")  // in words, then what the server said
                }
                onClicked: bar.openKb()
            }
            ToolButton {
                objectName: "compareButton"
                text: "⇄  Compare"
                enabled: chat.model.loaded
                Accessible.name: "Compare backends"
                ToolTip.visible: hovered
                ToolTip.text: "Run one prompt on several backends side by side: speed, time per op, memory, logit differences"
                onClicked: bar.openCompare()
            }
            ToolButton {
                text: "⇩  Export ▾"
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
                text: "⚙  Settings"
                Accessible.name: "Settings: system prompt and sampling"
                onClicked: bar.openSettings()
            }
        }
        Label {
            objectName: "fastestText"
            Layout.fillWidth: true
            visible: chat.fastestDevice.text.length > 0
            text: chat.fastestDevice.text
            textFormat: Text.PlainText  // device names from the drivers
            elide: Text.ElideRight
            font.pointSize: theme.fontSmall
            color: theme.mutedText
            leftPadding: theme.spacingSmall
            Accessible.name: chat.fastestDevice.text
        }
        Label {
            objectName: "modelInfo"
            Layout.fillWidth: true
            text: chat.model.line
            textFormat: Text.PlainText  // the model's config.json names its type and architecture
            elide: Text.ElideRight
            font.pointSize: theme.fontSmall
            color: theme.mutedText
            leftPadding: theme.spacingSmall
            Accessible.name: "Model: " + chat.model.line
            PlainToolTip {
                visible: infoHover.hovered
                text: chat.model.details
            }
            HoverHandler { id: infoHover }
        }
    }
}
