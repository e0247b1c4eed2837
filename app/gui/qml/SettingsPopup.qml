// The system prompt, the sampling settings of the next answers, and the context length and threads
// of the next load (chat.settings, kept per model folder).
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts

Dialog {
    id: dialog
    objectName: "settingsDialog"
    title: "Settings"
    modal: true
    anchors.centerIn: Overlay.overlay
    width: Math.min(560, Overlay.overlay ? Overlay.overlay.width - 40 : 560)
    standardButtons: Dialog.Close

    GridLayout {
        anchors.fill: parent
        columns: 3
        columnSpacing: 10

        Label { text: "System prompt"; Layout.alignment: Qt.AlignTop }
        TextBox {
            Layout.columnSpan: 2
            Layout.fillWidth: true
            Layout.preferredHeight: 70
            wrapMode: TextArea.Wrap
            text: chat.systemPrompt
            placeholderText: "Instructions at the start of this conversation (the default model was not trained with any)"
            Accessible.name: "System prompt"
            onEditingFinished: chat.systemPrompt = text
        }

        Label { text: "Temperature" }
        Slider {
            id: temperature
            Layout.fillWidth: true
            from: 0; to: 2; stepSize: 0.05
            value: chat.settings.temperature
            Accessible.name: "Temperature"
            onMoved: chat.settings.temperature = value
        }
        Label { text: chat.settings.temperature <= 0 ? "greedy" : chat.settings.temperature.toFixed(2) }

        Label { text: "Top-k" }
        SpinBox {
            Layout.fillWidth: true
            from: 0; to: 1000
            value: chat.settings.topK
            editable: true
            Accessible.name: "Top-k"
            onValueModified: chat.settings.topK = value
        }
        Label { text: chat.settings.topK === 0 ? "off" : "" }

        Label { text: "Top-p" }
        Slider {
            Layout.fillWidth: true
            from: 0; to: 1; stepSize: 0.01
            value: chat.settings.topP
            Accessible.name: "Top-p"
            onMoved: chat.settings.topP = value
        }
        Label { text: chat.settings.topP >= 1 ? "off" : chat.settings.topP.toFixed(2) }

        Label { text: "Min-p" }
        Slider {
            Layout.fillWidth: true
            from: 0; to: 0.5; stepSize: 0.01
            value: chat.settings.minP
            Accessible.name: "Min-p"
            onMoved: chat.settings.minP = value
        }
        Label { text: chat.settings.minP <= 0 ? "off" : chat.settings.minP.toFixed(2) }

        Label { text: "Repeat penalty" }
        Slider {
            Layout.fillWidth: true
            from: 1; to: 2; stepSize: 0.01
            value: chat.settings.repeatPenalty
            Accessible.name: "Repeat penalty"
            onMoved: chat.settings.repeatPenalty = value
        }
        Label { text: chat.settings.repeatPenalty <= 1 ? "off" : chat.settings.repeatPenalty.toFixed(2) }

        Label { text: "Answer length" }
        SpinBox {
            Layout.fillWidth: true
            from: 1; to: 32768
            value: chat.settings.maxTokens
            editable: true
            Accessible.name: "Most tokens per answer"
            onValueModified: chat.settings.maxTokens = value
        }
        Label { text: "tokens at most" }

        Label { text: "Context length" }
        SpinBox {
            objectName: "contextLengthBox"
            Layout.fillWidth: true
            from: 0; to: 1048576; stepSize: 256
            value: chat.settings.contextLength
            editable: true
            Accessible.name: "Context length in tokens (0: the model's default)"
            onValueModified: chat.settings.contextLength = value
        }
        Label { text: chat.settings.contextLength === 0 ? "model's default" : "tokens" }

        Label { text: "Threads" }
        SpinBox {
            objectName: "threadsBox"
            Layout.fillWidth: true
            from: 0; to: 256
            value: chat.settings.threads
            editable: true
            Accessible.name: "Threads (0: the backend's choice)"
            onValueModified: chat.settings.threads = value
        }
        Button {
            text: "Reload"
            enabled: chat.model.loaded && !chat.model.loading
            Accessible.name: "Reload the model with this context length and threads"
            ToolTip.visible: hovered
            ToolTip.text: "Context length and threads apply when the model loads; the conversation stays"
            onClicked: chat.model.reloadModel()
        }

        Label {
            Layout.columnSpan: 3
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            opacity: 0.7
            text: "Sampling settings, context length and threads are kept for each model folder (the last two apply when it loads); the system prompt belongs to this conversation."
        }
    }
}
