// A tooltip for text from outside the app (a model's folder and architecture, a device's name, a
// server's message): shown as plain text. The attached ToolTip guesses the format, so text that
// looks like HTML would be rendered as HTML, and an <img> in it loaded.
import QtQuick
import QtQuick.Controls

ToolTip {
    id: tip
    contentItem: Text {
        text: tip.text
        textFormat: Text.PlainText
        wrapMode: Text.Wrap
        font: tip.font
        color: tip.palette.toolTipText
    }
}
