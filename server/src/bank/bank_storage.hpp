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
//     crash during it leaves no blob under that name (temporary name, then rename);
//   - one writer at a time: a writer holds the bank's writer lock (lock_writer) from reading the
//     published version to publishing the next, and publish_pointer() is a compare-and-swap, so
//     two writers on two machines can never both publish "version N+1".
// Implementations: the local folder (folder_storage.cpp) and a Ceph RADOS pool
// (server/src/store/rados_storage.cpp); store_location.hpp opens either from a location string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mnemo/error.hpp"

namespace mnemo::kb {

// The most a pointer (CURRENT: one line) may hold; every store refuses a longer one and readers
// cap their read of it here.
constexpr uint64_t kMaxPointerBytes = 4096;

// Random-access reads of one immutable blob. Thread-safe: read() may run from many threads at
// once (the local implementation is pread on one file descriptor).
class BlobReader {
public:
    virtual ~BlobReader() = default;
    virtual uint64_t size() const = 0;
    // Exactly n bytes at `offset`, or mnemo::Error naming the blob (short read, I/O error).
    virtual void read(uint64_t offset, void* dst, size_t n) const = 0;
    // Several ranges at once (a retrieval's top-k records): an object store issues them in
    // parallel (RADOS aio) instead of one round trip after another. Same errors as read().
    struct Range {
        uint64_t offset;
        void* dst;
        size_t n;
    };
    virtual void read_ranges(const std::vector<Range>& ranges) const {
        for (const Range& r : ranges) read(r.offset, r.dst, r.n);
    }
};

// Held by the one writer of a bank (lock_writer); released when destroyed. A lock whose holder
// died without releasing it is reclaimed by the store (the folder: the OS drops a dead process's
// flock at once; RADOS: the lock is a lease that runs out, renew() extends it).
class WriterLock {
public:
    virtual ~WriterLock() = default;
    // Called before each blob a writer writes, so a long build keeps its lease; throws when the
    // lock was lost (the lease ran out and another writer took it).
    virtual void renew() = 0;
};

// publish_pointer()'s compare-and-swap failed: another writer published in between.
class PointerConflict : public Error {
public:
    using Error::Error;
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
    // Replaces the pointer object `name` (e.g. "CURRENT") atomically and durably, provided it
    // still holds `expected` (nullopt: provided it does not exist yet); otherwise PointerConflict
    // and nothing changes.
    virtual void publish_pointer(const std::string& name, std::string_view bytes, const std::optional<std::string>& expected) = 0;
    // The bank's writer lock (see WriterLock). `who` is shown to a writer that finds it taken
    // ("mnemo-kb add on host, pid N"). Throws mnemo::Error naming the holder when another writer
    // has it: writers never wait for each other silently.
    virtual std::unique_ptr<WriterLock> lock_writer(const std::string& who) = 0;
    // Removes a blob no published version names (garbage of an interrupted build).
    virtual void remove_blob(const std::string& name) = 0;
};

// The local implementation: one folder on a POSIX file system (pread, fsync, rename).
// create: make the folder when it does not exist.
std::shared_ptr<BankStorage> open_folder_storage(const std::string& dir, bool create);

}  // namespace mnemo::kb
