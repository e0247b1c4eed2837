// The open conversation's messages, following the answer as it streams in.
import QtQuick
import QtQuick.Controls

ListView {
    id: view
    clip: true
    spacing: 10
    topMargin: 10
    bottomMargin: 10
    model: chat.conversation
    ScrollBar.vertical: ScrollBar {}
    Accessible.name: "Conversation"
    delegate: MessageDelegate {
        width: view.width - 24
        x: 12
        isLast: index === view.count - 1
    }
    // Stay at the end while an answer grows, unless the reader scrolled up.
    property bool following: true
    onMovementEnded: following = atYEnd
    onCountChanged: if (following) Qt.callLater(positionViewAtEnd)
    onContentHeightChanged: if (following) Qt.callLater(positionViewAtEnd)

    Label {
        anchors.centerIn: parent
        width: Math.min(parent.width - 40, 560)
        visible: view.count === 0
        wrapMode: Text.Wrap
        horizontalAlignment: Text.AlignHCenter
        opacity: 0.75
        text: "Ask the model something.\nThe bundled default model knows the facts of a small synthetic world, "
              + "for example “Where was Tour Hujert born?” (assets/world/questions-train.jsonl)."
    }
}
