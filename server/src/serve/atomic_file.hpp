// Replacing a small file so that a reader sees the old or the new content, never a part: the
// token file (`mnemo-kb token new`) and the port file (`serve --port-file`, which scripts poll).
#pragma once

#include <string>
#include <string_view>

namespace mnemo::kb {

// Writes `content` to PATH.tmp.PID, fsyncs it, renames it over `path` and fsyncs the folder.
// `mode` applies to a new file (the token file is 0600). Throws mnemo::Error naming the path.
void write_file_atomically(const std::string& path, std::string_view content, unsigned mode);

}  // namespace mnemo::kb
