#include "atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "mnemo/error.hpp"

namespace mnemo::cli {

namespace fs = std::filesystem;

namespace {

fs::path folder_of(const std::string& path) {
    const fs::path parent = fs::path(path).parent_path();
    return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
    // The pid keeps two runs writing the same report from sharing a temporary file.
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
    const int err = errno;
    const bool closed = std::fclose(f) == 0;
    if (!written || !flushed || !closed) {
        std::remove(tmp.c_str());
        throw Error("cannot write '" + path + "': " + std::strerror(err));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int rerr = errno;
        std::remove(tmp.c_str());
        throw Error("cannot write '" + path + "': " + std::strerror(rerr));
    }
}

void check_writable(const std::string& path, const std::string& flag) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error(flag + " '" + path + "' is a folder; expected a file name");
    const fs::path folder = folder_of(path);
    if (!fs::is_directory(folder, ec)) throw Error(flag + " '" + path + "': folder '" + folder.string() + "' does not exist");
    if (::access(folder.c_str(), W_OK) != 0)
        throw Error(flag + " '" + path + "': folder '" + folder.string() + "' is not writable");
}

}  // namespace mnemo::cli
