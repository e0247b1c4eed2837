// What a path that is not a regular file is, in words, for the messages of the file readers and
// writers ("is a FIFO, expected a regular file").
#pragma once

#include <sys/stat.h>

namespace mnemo::detail {

inline const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

}  // namespace mnemo::detail
