// records.bin of a memory folder, open for reading records at their offsets: a regular file
// only (mnemo/io/file_read.hpp; a FIFO in its place would block the open), read with pread so
// that no file position is shared.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <utility>

#include "mnemo/io/file_read.hpp"

namespace mnemo::detail {

class RecordsFile {
public:
    RecordsFile() = default;
    explicit RecordsFile(const std::string& path) {
        const OpenedFile f = open_regular_file(path);
        fd_ = f.fd;
        size_ = f.size;
    }
    ~RecordsFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    RecordsFile(RecordsFile&& o) noexcept : fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}
    RecordsFile& operator=(RecordsFile&& o) noexcept {
        std::swap(fd_, o.fd_);
        std::swap(size_, o.size_);
        return *this;
    }

    uint64_t size() const { return size_; }
    // Exactly n bytes at `offset`, or false (a short file, a read error).
    bool read_at(uint64_t offset, void* buf, size_t n) const {
        auto* p = static_cast<char*>(buf);
        while (n > 0) {
            const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return false;
            p += got;
            n -= static_cast<size_t>(got);
            offset += static_cast<uint64_t>(got);
        }
        return true;
    }

private:
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace mnemo::detail
