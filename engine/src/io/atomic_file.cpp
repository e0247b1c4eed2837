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

AtomicFileWriter::AtomicFileWriter(const std::string& path, unsigned mode) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(path, std::string("it is ") + detail::file_kind(st.st_mode) + ", expected a regular file or a new one");
    // A new file of our own, never one found there: O_EXCL|O_NOFOLLOW, so a link someone placed at
    // the temporary name (in a shared folder) cannot redirect the write. The pid and a counter keep
    // processes and threads writing the same file apart; a name taken is skipped.
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 64 && fd_ < 0; ++attempt) {
        tmp_ = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
        fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
        if (fd_ < 0 && errno != EEXIST) fail(path, std::strerror(errno));
    }
    if (fd_ < 0) fail(path, "every temporary name beside it is taken (" + tmp_ + ")");
}

AtomicFileWriter::~AtomicFileWriter() {
    if (fd_ >= 0) {  // not committed
        ::close(fd_);
        ::unlink(tmp_.c_str());
    }
}

void AtomicFileWriter::write(std::string_view data) { write_all(fd_, data, path_); }

void AtomicFileWriter::commit() {
    if (::fsync(fd_) != 0) fail(path_, std::strerror(errno));
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmp_.c_str());
        fail(path_, std::strerror(err));
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp_.c_str());
        fail(path_, std::strerror(err));
    }
    // The rename itself is durable only once the folder's entry is on disk.
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
}

void write_file_atomically(const std::string& path, std::string_view content, unsigned mode) {
    AtomicFileWriter w(path, mode);
    w.write(content);
    w.commit();
}

}  // namespace mnemo
