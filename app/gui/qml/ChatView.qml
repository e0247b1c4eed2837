// The open conversation's messages, following the answer as it streams in.
import QtQuick
import QtQuick.Controls

ListView {
    id: view
    clip: true
    spacing: theme.spacingLarge + 4
    topMargin: theme.spacingLarge
    bottomMargin: theme.spacingLarge
    model: chat.conversation
    ScrollBar.vertical: ScrollBar {}
    Accessible.name: "Conversation"
    // A reading column: at most 880 pixels wide, centred, as chat apps set text.
    delegate: MessageDelegate {
        width: Math.min(view.width - 2 * theme.spacingLarge - 8, 880)
        x: Math.round((view.width - width) / 2)
        isLast: index === view.count - 1
    }
    // Stay at the end while an answer grows, unless the reader scrolled up.
    property bool following: true
    onMovementEnded: following = atYEnd
    onCountChanged: if (following) Qt.callLater(positionViewAtEnd)
    onContentHeightChanged: if (following) Qt.callLater(positionViewAtEnd)

    // An empty conversation: what to do, large, and an example, muted.
    Column {
        anchors.centerIn: parent
        width: Math.min(parent.width - 40, 560)
        visible: view.count === 0
        spacing: theme.spacing
        Label {
            width: parent.width
            horizontalAlignment: Text.AlignHCenter
            text: "Ask the model something"
            color: theme.text
            font.pointSize: theme.fontHeading + 3
            font.weight: Font.DemiBold
        }
        Label {
            width: parent.width
            wrapMode: Text.Wrap
            horizontalAlignment: Text.AlignHCenter
            color: theme.mutedText
            font.pointSize: theme.fontTitle
            text: "The bundled default model knows the facts of a small synthetic world, "
                  + "for example “Where was Tour Hujert born?” (assets/world/questions-train.jsonl)."
        }
    }
}
