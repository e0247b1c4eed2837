// A path from QML: FileDialog and FolderDialog give file: URLs, text fields give plain paths.
#pragma once

#include <QString>
#include <QUrl>

namespace mnemo::gui {

inline QString localPath(const QString& pathOrUrl) {
    if (pathOrUrl.startsWith(QLatin1String("file:"))) return QUrl(pathOrUrl).toLocalFile();
    return pathOrUrl;
}

}  // namespace mnemo::gui
