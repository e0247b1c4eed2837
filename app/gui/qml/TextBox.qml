// A TextArea with a visible frame (Fusion draws none for a bare TextArea), in the palette's
// colours so it follows a light or dark system theme.
import QtQuick
import QtQuick.Controls

TextArea {
    id: box
    wrapMode: TextArea.Wrap
    padding: theme.spacing
    background: Rectangle {
        color: box.palette.base
        border.color: box.activeFocus ? box.palette.highlight : box.palette.mid
        border.width: box.activeFocus ? 2 : 1
        radius: theme.radius - 2
    }
}
