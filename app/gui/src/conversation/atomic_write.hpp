// A whole file written atomically, for the conversation store and the exports: the engine's
// mnemo::write_file_atomically (mnemo/io/atomic_file.hpp, also used by the CLI and mnemo-kb), with
// its error as the reason the notice bar shows. Not QSaveFile: it would rename its temporary file
// over whatever the path is — a FIFO, or as root a symlink to /dev/zero — where the engine's
// writer refuses anything but a regular file, and it would be a second implementation of the
// same promise.
#pragma once

#include <QByteArray>
#include <QString>

namespace mnemo::gui {

// Returns "" when `bytes` were written to `path`, else the reason, naming the path.
QString writeFileAtomically(const QString& path, const QByteArray& bytes);

}  // namespace mnemo::gui
