#include "atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "mnemo/error.hpp"

namespace mnemo::kb {
namespace {

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, std::string_view data, const std::string& path) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error("writing '" + path + "': " + errno_text());
        data.remove_prefix(static_cast<size_t>(n));
    }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content, unsigned mode) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode));
    if (fd < 0) throw Error("creating '" + tmp + "': " + errno_text());
    try {
        write_all(fd, content, tmp);
        if (::fsync(fd) != 0) throw Error("fsync of '" + tmp + "': " + errno_text());
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = errno_text();
        ::unlink(tmp.c_str());
        throw Error("renaming '" + tmp + "' to '" + path + "': " + why);
    }
    // The rename itself is durable only once the folder's entry is on disk.
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

}  // namespace mnemo::kb
