#include "conversation/atomic_write.hpp"

#include <QFile>
#include <string_view>

#include "mnemo/io/atomic_file.hpp"

namespace mnemo::gui {

QString writeFileAtomically(const QString& path, const QByteArray& bytes) {
    try {
        write_file_atomically(QFile::encodeName(path).toStdString(),
                              std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        return {};
    } catch (const std::exception& e) {
        return QString::fromLocal8Bit(e.what());  // "cannot write PATH: why", the path in its file-system encoding
    }
}

}  // namespace mnemo::gui
