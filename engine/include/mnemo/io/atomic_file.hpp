// Writing a whole file so that a reader sees the old content or the new, never a part: the bytes
// go to a new temporary file beside the target (PATH.tmp.PID.N, created exclusively), which is flushed to disk and renamed
// over the target only once everything is written; the folder is then flushed too, so the rename
// survives a crash. A failed or interrupted write leaves the target as it was and no temporary
// file. Every program writes such files through here: `mnemo eval`'s reports, `mnemo-kb`'s token
// and port files, mnemo-chat's conversations.
#pragma once

#include <string>
#include <string_view>

#include "mnemo/api.hpp"

namespace mnemo {

// Writes `content` to `path`. `mode` is the permission of the new file (before the umask; the
// token file is 0600). A path that exists as something other than a regular file (after
// symlinks: a folder, a FIFO, a device) is refused: renaming over it would replace it, and as
// root a link to /dev/zero would cost the system its /dev/zero. Throws mnemo::Error
// "cannot write PATH: why".
MNEMO_API void write_file_atomically(const std::string& path, std::string_view content, unsigned mode = 0644);

// The same for a file written in pieces (a GGUF file of gigabytes, converted tensor by tensor):
// the constructor creates the temporary file (same checks as above), write() appends, commit()
// flushes and renames it over `path`. Destroyed without commit() (an error on the way), the
// temporary file is removed and `path` is left as it was.
class MNEMO_API AtomicFileWriter {
public:
    explicit AtomicFileWriter(const std::string& path, unsigned mode = 0644);
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
    void write(std::string_view data);
    void commit();

private:
    std::string path_, tmp_;
    int fd_ = -1;
};

}  // namespace mnemo
