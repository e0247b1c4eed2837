// What the last answer measured: tokens/s, time to first token, context used, memory in use.
import QtQuick
import QtQuick.Controls

Frame {
    padding: 4
    Label {
        objectName: "performanceStrip"
        text: chat.performance
        font.pointSize: 9
        Accessible.name: "Performance: " + chat.performance
    }
}
