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
        Label {
            objectName: "trainedContextLabel"
            // The model's trained length beside the box: more than that is clamped to it at the
            // load, and the status says so (ModelInfo::contextNote).
            text: (chat.settings.contextLength === 0 ? "model's default" : "tokens")
                  + (chat.model.trainedContext > 0 ? " (trained: " + chat.model.trainedContext + ")" : "")
        }
        Label {
            objectName: "contextWarning"
            Layout.columnSpan: 3
            Layout.fillWidth: true
            visible: chat.model.trainedContext > 0 && chat.settings.contextLength > chat.model.trainedContext
            wrapMode: Text.Wrap
            color: theme.warning
            text: "The model was trained on " + chat.model.trainedContext + " tokens: a context of "
                  + chat.settings.contextLength + " is clamped to " + chat.model.trainedContext + " when it loads."
        }

        Label { text: "Seed" }
        ComboBox {
            objectName: "seedModeBox"
            Layout.fillWidth: true
            model: ["New for each answer", "Fixed"]
            currentIndex: chat.settings.fixedSeed ? 1 : 0
            Accessible.name: "Seed: new for each answer, or fixed"
            onActivated: index => chat.settings.fixedSeed = index === 1
        }
        TextField {
            objectName: "seedField"
            Layout.preferredWidth: 110
            enabled: chat.settings.fixedSeed
            text: chat.settings.seed
            validator: RegularExpressionValidator { regularExpression: /[0-9]{1,10}/ }
            Accessible.name: "Fixed seed (0 to 4294967295)"
            ToolTip.visible: hovered
            ToolTip.text: "The same seed, settings and conversation give the same answer; each answer shows its seed"
            onEditingFinished: chat.settings.seed = Number(text)
        }

        Label { text: "Context full" }
        ComboBox {
            objectName: "contextOverflowBox"
            Layout.columnSpan: 2
            Layout.fillWidth: true
            model: ["Stop and say so", "Drop the oldest messages"]
            currentIndex: chat.settings.dropOldestTurns ? 1 : 0
            Accessible.name: "When the conversation is longer than the context"
            ToolTip.visible: hovered
            ToolTip.text: "When the conversation is longer than the context: stop with an error, or leave out its oldest messages (never the system prompt); each answer says how many"
            onActivated: index => chat.settings.dropOldestTurns = index === 1
        }

        Label { text: "Answers" }
        ComboBox {
            objectName: "answersBox"
            Layout.columnSpan: 2
            Layout.fillWidth: true
            model: ["In the model's words", "Quoted from the memories read"]
            currentIndex: chat.settings.grounded ? 1 : 0
            Accessible.name: "Answers: in the model's words, or quoted from the memories read"
            ToolTip.visible: hovered
            ToolTip.text: "Quoted: an answer may only quote the memories its question read, not repeat the question, and ends where a quoted word or name ends. For short factual answers; without memories the model answers in its own words"
            onActivated: index => chat.settings.grounded = index === 1
        }

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

        Label { text: "Appearance" }
        ComboBox {
            objectName: "appearanceBox"
            Layout.columnSpan: 2
            Layout.fillWidth: true
            readonly property var modes: ["system", "light", "dark"]
            model: ["As the desktop", "Light", "Dark"]
            currentIndex: Math.max(0, modes.indexOf(chat.settings.appearance))
            Accessible.name: "Appearance: as the desktop, light or dark"
            onActivated: index => chat.settings.appearance = modes[index]
        }

        Label {
            Layout.columnSpan: 3
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            opacity: 0.7
            text: "The appearance is for the whole app. Sampling settings, the seed, what to do when the context is full, context length and threads are kept for each model folder (the last two apply when it loads); the system prompt belongs to this conversation."
        }
    }
}
