// Where a bank's files live. The bank (bank.hpp) and its writer (bank_writer.hpp) only ever go
// through this interface, so a distributed object store (Ceph RADOS, S3) can replace the local
// folder later without touching the protocol, the index or the records. The contract, in the
// words an object store understands (docs/kb-storage.md):
//   - names are flat ("seg-000003.rec", "manifest-000007.json", "CURRENT"): no folders;
//   - a blob, once published (write_blob returned), never changes: readers may cache it and
//     read ranges of it concurrently, from any thread;
//   - publish_pointer() replaces the small pointer object atomically: a reader sees the old or the
//     new content, never a mix, and a crash leaves one of the two;
//   - write_blob() is durable when it returns (fsync of the data and of its folder entry), and a
//     crash during it leaves no blob under that name (temporary name, then rename).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mnemo::kb {

// Random-access reads of one immutable blob. Thread-safe: read() may run from many threads at
// once (the local implementation is pread on one file descriptor).
class BlobReader {
public:
    virtual ~BlobReader() = default;
    virtual uint64_t size() const = 0;
    // Exactly n bytes at `offset`, or mnemo::Error naming the blob (short read, I/O error).
    virtual void read(uint64_t offset, void* dst, size_t n) const = 0;
};

class BankStorage {
public:
    virtual ~BankStorage() = default;
    // "folder '/srv/bank'": the prefix of errors.
    virtual std::string describe() const = 0;

    // A whole small blob (manifest, texts, vectors), or nothing when it does not exist. A blob
    // larger than `max_bytes` is an error before anything is read (a pointer is a line, a blob
    // the manifest describes has the manifest's size), and so is anything but stored bytes (the
    // folder refuses a FIFO or a device: opening one could block forever).
    virtual std::optional<std::string> read_blob(const std::string& name, uint64_t max_bytes = UINT64_MAX) const = 0;
    // A large blob (a segment) for range reads; mnemo::Error when it does not exist.
    virtual std::unique_ptr<BlobReader> open_blob(const std::string& name) const = 0;
    virtual bool exists(const std::string& name) const = 0;
    virtual std::vector<std::string> list() const = 0;

    // Writes `name` durably and atomically (see above). An existing blob of that name is an
    // error: blobs are immutable.
    virtual void write_blob(const std::string& name, std::string_view bytes) = 0;
    // Replaces the pointer object `name` (e.g. "CURRENT") atomically and durably.
    virtual void publish_pointer(const std::string& name, std::string_view bytes) = 0;
    // Removes a blob no published version names (garbage of an interrupted build).
    virtual void remove_blob(const std::string& name) = 0;
};

// The local implementation: one folder on a POSIX file system (pread, fsync, rename).
// create: make the folder when it does not exist.
std::shared_ptr<BankStorage> open_folder_storage(const std::string& dir, bool create);

}  // namespace mnemo::kb
