// The compare view: one prompt on two or more backends side by side (chat.compare, a
// CompareController). Each backend is a column: speed, time per op category as bars, peak memory,
// max |Δlogit| against the reference and the first diverging token; a backend that could not run
// shows why. Runs on the compare thread; Cancel ends it at once.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Dialog {
    id: view
    objectName: "compareView"
    title: "Compare backends"
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Overlay.overlay ? Overlay.overlay.width - 60 : 1200
    height: Overlay.overlay ? Overlay.overlay.height - 60 : 700
    standardButtons: Dialog.Close
    readonly property var compare: chat.compare

    // The backends ticked in the list ("cpu:0", "vulkan:0").
    function chosenBackends() {
        var specs = []
        for (var i = 0; i < backendChoices.count; ++i) {
            var box = backendChoices.itemAt(i)
            if (box && box.visible && box.checked) specs.push(box.spec)
        }
        return specs
    }
    function run() { compare.start(chat.model.dir, promptField.text, chosenBackends()) }

    ColumnLayout {
        anchors.fill: parent
        spacing: 6

        RowLayout {
            Layout.fillWidth: true
            TextField {
                id: promptField
                objectName: "comparePrompt"
                Layout.fillWidth: true
                placeholderText: "A prompt to run on each backend (as one message in the model's chat template)"
                Accessible.name: "Prompt to compare"
                onAccepted: view.run()
            }
            Label { text: compare.stopAtEndOfTurn ? "At most" : "Steps" }
            SpinBox {
                from: 1; to: 512
                value: compare.steps
                editable: true
                Accessible.name: "Greedy tokens per backend, at most"
                onValueModified: compare.steps = value
            }
            CheckBox {
                objectName: "compareStopAtEndOfTurn"
                text: "To the end of the turn"
                checked: compare.stopAtEndOfTurn
                Accessible.name: "Stop at the reference backend's end of turn, as the chat does"
                ToolTip.visible: hovered
                ToolTip.text: "Every column stops where the reference backend ends its answer; unticked, all steps run"
                onToggled: compare.stopAtEndOfTurn = checked
            }
            Button {
                objectName: "compareRunButton"
                text: "Compare"
                visible: !compare.running
                enabled: chat.model.loaded && promptField.text.trim().length > 0 && view.chosenBackends().length >= 2
                Accessible.name: "Run the comparison"
                onClicked: view.run()
            }
            Button {
                objectName: "compareCancelButton"
                text: "Cancel"
                visible: compare.running
                Accessible.name: "Cancel the comparison"
                onClicked: compare.cancel()
            }
            BusyIndicator {
                running: compare.running
                visible: compare.running
                Layout.preferredHeight: 28
                Layout.preferredWidth: 28
                Accessible.name: "Comparing"
            }
        }

        Flow {
            Layout.fillWidth: true
            spacing: 8
            Repeater {
                id: backendChoices
                model: chat.devices
                CheckBox {
                    id: box
                    required property var model
                    readonly property string spec: model.backend + ":" + model.device
                    visible: model.enabled && model.backend.length > 0
                    text: model.label
                    // The device's name comes from its driver: plain text.
                    contentItem: Text {
                        leftPadding: box.indicator && !box.mirrored ? box.indicator.width + box.spacing : 0
                        text: box.text
                        textFormat: Text.PlainText
                        font: box.font
                        color: box.palette.windowText
                        elide: Text.ElideRight
                        verticalAlignment: Text.AlignVCenter
                    }
                    // CPU and the first Vulkan device to start with: the comparison people make most.
                    checked: model.backend === "cpu" || (model.backend === "vulkan" && model.device === 0)
                    Accessible.name: "Compare on " + model.label
                }
            }
        }

        Label {
            objectName: "compareStatus"
            Layout.fillWidth: true
            visible: compare.status.length > 0
            text: compare.status
            textFormat: Text.PlainText
            wrapMode: Text.Wrap
            color: compare.statusIsError ? theme.error : palette.windowText
            Accessible.name: (compare.statusIsError ? "Error: " : "Status: ") + compare.status
        }
        Label {
            objectName: "compareMemories"
            Layout.fillWidth: true
            text: "Memories: " + compare.memories + " (the chat's: change them in Knowledge…)"
            textFormat: Text.PlainText  // a folder's or a server's name
            elide: Text.ElideMiddle
            opacity: 0.7
            font.pointSize: 9
        }
        Label {
            Layout.fillWidth: true
            visible: compare.summary.length > 0
            text: compare.summary
            textFormat: Text.PlainText
            elide: Text.ElideMiddle
            opacity: 0.7
            font.pointSize: 9
        }

        ListView {
            id: columns
            objectName: "compareColumns"
            Layout.fillWidth: true
            Layout.fillHeight: true
            orientation: ListView.Horizontal
            spacing: 8
            clip: true
            model: compare.columns
            ScrollBar.horizontal: ScrollBar {}
            delegate: CompareColumn {
                height: columns.height
                width: Math.max(300, (columns.width - columns.spacing * (columns.count - 1)) / Math.max(1, columns.count))
                maxOpMs: compare.maxOpMs
            }
        }
    }
}
