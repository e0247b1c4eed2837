// open_folder_storage: a bank's blobs as files of one local folder. Durability follows the usual
// POSIX recipe: write a temporary file, fsync it, rename it over the final name (atomic within a
// folder), fsync the folder so the rename itself survives a power cut.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "bank_storage.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// Temporary names start with this; list() hides them and the writer never uses it.
constexpr const char* kTempPrefix = ".tmp-";
// The writer lock's file (flock): not a blob, hidden from list().
constexpr const char* kLockFile = ".lock";

// flock() on the folder's lock file: the kernel releases it the moment its holder exits, however
// it exits (kill -9 included), so a dead writer never blocks the next one. The holder's
// description is written into the file for the message another writer gets.
class FolderWriterLock : public WriterLock {
public:
    explicit FolderWriterLock(int fd) : fd_(fd) {}
    ~FolderWriterLock() override { ::close(fd_); }  // closing drops the flock
    void renew() override {}  // a flock has no lease: held until closed

private:
    int fd_;
};

class FdBlobReader : public BlobReader {
public:
    FdBlobReader(int fd, uint64_t size, std::string where) : fd_(fd), size_(size), where_(std::move(where)) {}
    ~FdBlobReader() override { ::close(fd_); }
    uint64_t size() const override { return size_; }
    void read(uint64_t offset, void* dst, size_t n) const override {
        if (offset > size_ || n > size_ - offset)
            throw Error(where_ + ": read of " + std::to_string(n) + " bytes at " + std::to_string(offset) + " is past its end (" +
                        std::to_string(size_) + " bytes)");
        auto* p = static_cast<char*>(dst);
        size_t done = 0;
        while (done < n) {
            // pread keeps no file position, so any number of threads may read at once.
            const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) throw Error(where_ + ": read failed: " + errno_text());
            if (r == 0) throw Error(where_ + ": short read at " + std::to_string(offset + done));
            done += static_cast<size_t>(r);
        }
    }

private:
    int fd_;
    uint64_t size_;
    std::string where_;
};

class FolderStorage : public BankStorage {
public:
    explicit FolderStorage(std::string dir) : dir_(std::move(dir)) {}

    std::string describe() const override { return "folder '" + printable(dir_) + "'"; }

    std::optional<std::string> read_blob(const std::string& name, uint64_t max_bytes) const override {
        const OpenedFile f = open_file(name, /*must_exist=*/false);
        if (f.fd < 0) return std::nullopt;
        FdBlobReader r(f.fd, f.size, where(name));
        if (r.size() > max_bytes)
            throw Error(where(name) + ": " + std::to_string(r.size()) + " bytes, more than the " + std::to_string(max_bytes) +
                        " it may have");
        std::string bytes(r.size(), '\0');
        r.read(0, bytes.data(), bytes.size());
        return bytes;
    }

    std::unique_ptr<BlobReader> open_blob(const std::string& name) const override {
        const OpenedFile f = open_file(name, /*must_exist=*/true);
        return std::make_unique<FdBlobReader>(f.fd, f.size, where(name));
    }

    bool exists(const std::string& name) const override {
        check_name(name);
        struct stat st {};
        return ::stat(path(name).c_str(), &st) == 0;
    }

    std::vector<std::string> list() const override {
        std::vector<std::string> out;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir_, ec)) {
            const std::string n = e.path().filename().string();
            if (n.rfind(kTempPrefix, 0) != 0 && n != kLockFile) out.push_back(n);
        }
        if (ec) throw Error(describe() + ": cannot list: " + ec.message());
        std::sort(out.begin(), out.end());
        return out;
    }

    void write_blob(const std::string& name, std::string_view bytes) override {
        check_name(name);
        if (exists(name)) throw Error(where(name) + ": already exists (blobs are immutable)");
        const std::string tmp = write_temp(name, bytes);
        // link() fails when the name exists, unlike rename(): two writers can never replace each
        // other's blob.
        if (::link(tmp.c_str(), path(name).c_str()) != 0) {
            const std::string why = errno_text();
            ::unlink(tmp.c_str());
            throw Error(where(name) + ": cannot publish: " + why);
        }
        ::unlink(tmp.c_str());
        sync_dir();
    }

    void publish_pointer(const std::string& name, std::string_view bytes, const std::optional<std::string>& expected) override {
        check_name(name);
        // The compare half of the swap; the writer lock every writer holds makes the two halves
        // one step for writers (a folder has no atomic compare-and-rename).
        const std::optional<std::string> now = read_blob(name, kMaxPointerBytes);
        if (now != expected)
            throw PointerConflict(where(name) + ": changed since this writer read it (another writer published meanwhile): expected " +
                                  (expected ? "'" + printable(*expected, 80) + "'" : std::string("none")) + ", found " +
                                  (now ? "'" + printable(*now, 80) + "'" : std::string("none")));
        const std::string tmp = write_temp(name, bytes);
        if (::rename(tmp.c_str(), path(name).c_str()) != 0) {
            const std::string why = errno_text();
            ::unlink(tmp.c_str());
            throw Error(where(name) + ": cannot replace: " + why);
        }
        sync_dir();
    }

    std::unique_ptr<WriterLock> lock_writer(const std::string& who) override {
        const std::string path = dir_ + "/" + kLockFile;
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) throw Error(describe() + ": cannot open the writer lock '" + printable(path) + "': " + errno_text());
        if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const std::string why = errno == EWOULDBLOCK ? "" : errno_text();
            char holder[512] = {};
            const ssize_t got = ::pread(fd, holder, sizeof holder - 1, 0);
            ::close(fd);
            if (!why.empty()) throw Error(describe() + ": cannot take the writer lock: " + why);
            throw Error(describe() + ": another writer is writing this bank (" + printable(std::string(holder, got > 0 ? size_t(got) : 0), 200) +
                        "); one writer at a time: try again when it has finished");
        }
        // Who holds it, for the message above; failing to say is no reason to fail the write.
        if (::ftruncate(fd, 0) == 0) {
            [[maybe_unused]] const ssize_t w = ::pwrite(fd, who.data(), who.size(), 0);
        }
        return std::make_unique<FolderWriterLock>(fd);
    }

    void remove_blob(const std::string& name) override {
        check_name(name);
        // No fsync of the folder: a removal a crash undoes leaves garbage only, which no manifest
        // names and the next build removes again.
        if (::unlink(path(name).c_str()) != 0 && errno != ENOENT) throw Error(where(name) + ": cannot remove: " + errno_text());
    }

private:
    std::string where(const std::string& name) const { return describe() + ": '" + printable(name) + "'"; }
    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    // Flat names only: a name can never reach outside the folder or into a sub-folder.
    void check_name(const std::string& name) const {
        if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
            name.find('\0') != std::string::npos || name.rfind(kTempPrefix, 0) == 0 || name == kLockFile)
            throw Error(describe() + ": invalid blob name '" + printable(name) + "' (names are flat: no '/', not '.' or '..')");
    }

    // A blob's file, opened by mnemo::open_regular_file: regular files only, and never a blocking
    // open (a FIFO named CURRENT blocked `serve` in open(), where no signal but SIGKILL ended it).
    // fd -1 when the blob does not exist and need not.
    OpenedFile open_file(const std::string& name, bool must_exist) const {
        check_name(name);
        struct stat st {};
        if (!must_exist && ::stat(path(name).c_str(), &st) != 0 && errno == ENOENT) return OpenedFile{};
        try {
            return open_regular_file(path(name));
        } catch (const std::exception& e) {
            // The helper's message starts with the path, which where() already names.
            const std::string what = e.what(), p = path(name) + ": ";
            throw Error(where(name) + ": " + printable(what.rfind(p, 0) == 0 ? what.substr(p.size()) : what));
        }
    }

    // The bytes under a temporary name, fsynced; returns its path.
    std::string write_temp(const std::string& name, std::string_view bytes) {
        static std::atomic<uint64_t> serial{0};
        const std::string tmp = path(std::string(kTempPrefix) + std::to_string(::getpid()) + "-" + std::to_string(serial++) + "-" + name);
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) throw Error(where(name) + ": cannot create '" + printable(tmp) + "': " + errno_text());
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) {
                const std::string why = errno_text();
                ::close(fd);
                ::unlink(tmp.c_str());
                throw Error(where(name) + ": write failed: " + why);
            }
            done += static_cast<size_t>(w);
        }
        if (::fsync(fd) != 0 || ::close(fd) != 0) {
            const std::string why = errno_text();
            ::unlink(tmp.c_str());
            throw Error(where(name) + ": fsync failed: " + why);
        }
        return tmp;
    }

    void sync_dir() const {
        const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) throw Error(describe() + ": cannot open the folder to sync it: " + errno_text());
        const int rc = ::fsync(fd);
        ::close(fd);
        if (rc != 0) throw Error(describe() + ": fsync of the folder failed: " + errno_text());
    }

    std::string dir_;
};

}  // namespace

std::shared_ptr<BankStorage> open_folder_storage(const std::string& dir, bool create) {
    if (dir.empty()) throw Error("bank folder: empty path");
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        if (!create) throw Error("bank folder '" + printable(dir) + "' does not exist");
        fs::create_directories(dir, ec);
        if (ec) throw Error("bank folder '" + printable(dir) + "': cannot create: " + ec.message());
    }
    // Temporary files of interrupted writes (".tmp-*") are left alone: a writer may still be running.
    return std::make_shared<FolderStorage>(dir);
}

}  // namespace mnemo::kb
