// Whole files written atomically (mnemo/io/atomic_file.hpp).
#include "mnemo/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/file_kind.hpp"
#include "mnemo/error.hpp"

namespace mnemo {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) { throw Error("cannot write " + path + ": " + why); }

void write_all(int fd, std::string_view data, const std::string& path) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail(path, std::strerror(errno));
        data.remove_prefix(static_cast<size_t>(n));
    }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content, unsigned mode) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(path, std::string("it is ") + detail::file_kind(st.st_mode) + ", expected a regular file or a new one");
    // A new file of our own, never one found there: O_EXCL|O_NOFOLLOW, so a link someone placed at
    // the temporary name (in a shared folder) cannot redirect the write. The pid and a counter keep
    // processes and threads writing the same file apart; a name taken is skipped.
    static std::atomic<unsigned> counter{0};
    std::string tmp;
    int fd = -1;
    for (int attempt = 0; attempt < 64 && fd < 0; ++attempt) {
        tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
        if (fd < 0 && errno != EEXIST) fail(path, std::strerror(errno));
    }
    if (fd < 0) fail(path, "every temporary name beside it is taken (" + tmp + ")");
    try {
        write_all(fd, content, path);
        if (::fsync(fd) != 0) fail(path, std::strerror(errno));
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail(path, std::strerror(err));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        fail(path, std::strerror(err));
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

}  // namespace mnemo
