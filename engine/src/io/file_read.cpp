// Reading whole files without hanging or exhausting memory (mnemo/io/file_read.hpp).
#include "mnemo/io/file_read.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/file_kind.hpp"
#include "mnemo/error.hpp"

namespace mnemo {
namespace {

std::string human_bytes(uint64_t n) {
    char buf[32];
    if (n >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(n) / (1ull << 30));
    else if (n >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1ull << 20));
    else if (n >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / (1ull << 10));
    else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
    return buf;
}

// Closes the descriptor on every path out of read_file_capped, exceptions included.
struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

}  // namespace

OpenedFile open_regular_file(const std::string& path) {
    // stat() first: opening a device node can itself act (a serial line raises DTR, a tape
    // rewinds), so anything but a regular file is refused before it is opened.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        const int err = errno;
        throw Error(path + ": cannot open file: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) throw Error(path + ": is " + std::string(detail::file_kind(st.st_mode)) + ", expected a regular file");
    // O_NONBLOCK: the path may be swapped for a FIFO between stat() and open(), and opening a
    // FIFO for reading blocks until a writer appears; with it open() returns at once and fstat
    // below tells what was opened.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int err = errno;
        throw Error(path + ": cannot open file: " + std::strerror(err));
    }
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(path + ": cannot stat file: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path + ": is " + std::string(detail::file_kind(st.st_mode)) + ", expected a regular file");
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

std::string read_file_capped(const std::string& path, uint64_t max_bytes, const std::string& what) {
    const OpenedFile f = open_regular_file(path);
    const FdCloser closer{f.fd};
    if (f.size > max_bytes)
        throw Error(path + ": " + what + " is " + human_bytes(f.size) + ", more than the " + human_bytes(max_bytes) +
                    " it may have");
    std::string text;
    text.reserve(static_cast<size_t>(f.size));
    char buf[1 << 16];
    while (true) {
        const ssize_t n = ::read(f.fd, buf, sizeof buf);
        if (n < 0) {
            const int err = errno;
            if (err == EINTR) continue;
            throw Error(path + ": cannot read " + what + ": " + std::strerror(err));
        }
        if (n == 0) break;
        // A file that grows while it is read (a log, a file being written) stops at the cap too.
        if (text.size() + static_cast<size_t>(n) > max_bytes)
            throw Error(path + ": " + what + " grew past the " + human_bytes(max_bytes) + " it may have while it was read");
        text.append(buf, static_cast<size_t>(n));
    }
    return text;
}

}  // namespace mnemo
