// BankStorage on Ceph RADOS (rados_storage.hpp). How the contract of bank_storage.hpp maps onto
// objects:
//   - a blob is cut into kRadosObjectBytes objects: the head object under the blob's own name holds
//     the first piece and the xattr "mnemo.blob" ("SIZE PIECE"), the others are "NAME@1", "NAME@2"…;
//     a blob exists exactly when its head does. write_blob writes the pieces first and the head
//     last, in one write op that also creates it exclusively, so a crash leaves no blob under that
//     name (only pieces no head names, which list() reports so the writers' clean-up removes them);
//   - RADOS acknowledges a write once every replica of the placement group has it, so a blob is
//     durable when write_blob returns;
//   - the pointer (CURRENT) is one object replaced by one write op that first compares the xattr
//     "mnemo.pointer" with what the writer read (or creates the object exclusively): a
//     compare-and-swap executed by the primary OSD, atomic for every reader and writer;
//   - the writer lock is a RADOS advisory lock (cls_lock) on the object ".lock" with a lease that a
//     thread renews, so a writer killed with -9 blocks the next one for one lease at most;
//   - range reads go to the pieces that hold them, all at once (rados_aio_read), and wait for all.
#include "store/rados_storage.hpp"

#include <rados/librados.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

constexpr const char* kBlobXattr = "mnemo.blob";        // "SIZE PIECE" on a blob's head object
constexpr const char* kPointerXattr = "mnemo.pointer";  // a pointer's content, for the compare
constexpr const char* kHolderXattr = "mnemo.holder";    // who holds the writer lock
constexpr const char* kLockObject = ".lock";
constexpr const char* kLockName = "mnemo-writer";
constexpr int kLockLeaseSeconds = 30;

std::string rados_error(int rc) { return std::strerror(rc < 0 ? -rc : rc); }

// One cluster connection and the pool's I/O context, shared by the storage, its readers and its
// lock (each may outlive the others). librados's calls are thread-safe on one ioctx.
struct Connection {
    rados_t cluster = nullptr;
    rados_ioctx_t io = nullptr;
    std::string describe;  // "RADOS pool 'mnemo' namespace 'world'"
    std::string user;      // "client.mnemo", for capability errors
    ~Connection() {
        if (io) rados_ioctx_destroy(io);
        if (cluster) rados_shutdown(cluster);
    }
};

// Names are flat, as the folder's; '@' separates a blob from its pieces and names starting with
// '.' are the store's own (the lock), so neither may be a blob's.
void check_name(const Connection& c, const std::string& name) {
    if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos || name.find('@') != std::string::npos ||
        name.find('\0') != std::string::npos)
        throw Error(c.describe + ": invalid blob name '" + printable(name) + "' (names are flat: no '/', no '@', not starting with '.')");
}

std::string piece_name(const std::string& blob, uint64_t k) { return k == 0 ? blob : blob + "@" + std::to_string(k); }

// What an error code means to the user of a bank: capabilities and absence in words.
std::string op_failure(const Connection& c, const std::string& what, int rc) {
    if (rc == -EPERM || rc == -EACCES)
        return c.describe + ": " + what + ": permission denied: the key of " + c.user +
               " lacks the capability (a reader needs osd 'allow r pool=…', a writer 'allow rw pool=…')";
    if (rc == -ETIMEDOUT)
        return c.describe + ": " + what + ": timed out (the placement group's OSDs did not answer; `ceph -s` tells whether the cluster is healthy)";
    return c.describe + ": " + what + ": " + rados_error(rc);
}

struct BlobShape {
    uint64_t size = 0;
    uint64_t piece = kRadosObjectBytes;
};

// The head's "mnemo.blob" xattr; nothing when the head does not exist.
std::optional<BlobShape> blob_shape(const Connection& c, const std::string& name) {
    char buf[64] = {};
    const int rc = rados_getxattr(c.io, name.c_str(), kBlobXattr, buf, sizeof buf - 1);
    if (rc == -ENOENT) return std::nullopt;
    if (rc == -ENODATA)
        throw Error(c.describe + ": '" + printable(name) + "' is not a blob mnemo-kb wrote (no '" + kBlobXattr + "' attribute)");
    if (rc < 0) throw Error(op_failure(c, "'" + printable(name) + "'", rc));
    BlobShape s;
    unsigned long long size = 0, piece = 0;
    if (std::sscanf(buf, "%llu %llu", &size, &piece) != 2 || piece == 0)
        throw Error(c.describe + ": '" + printable(name) + "': unreadable '" + kBlobXattr + "' attribute '" + printable(buf) + "'");
    s.size = size;
    s.piece = piece;
    return s;
}

// Outstanding aio operations, waited for together; released whatever happens.
class AioBatch {
public:
    explicit AioBatch(const Connection& c) : c_(c) {}
    ~AioBatch() {
        for (Op& op : ops_) {
            rados_aio_wait_for_complete(op.completion);
            rados_aio_release(op.completion);
        }
    }
    void read(const std::string& oid, char* dst, size_t n, uint64_t off, std::string what) {
        Op op{nullptr, n, std::move(what)};
        check_start(rados_aio_create_completion2(nullptr, nullptr, &op.completion), op.what);
        const int rc = rados_aio_read(c_.io, oid.c_str(), op.completion, dst, n, off);
        keep_or_fail(op, rc);
    }
    void write_full(const std::string& oid, const char* src, size_t n, std::string what) {
        Op op{nullptr, 0, std::move(what)};
        check_start(rados_aio_create_completion2(nullptr, nullptr, &op.completion), op.what);
        const int rc = rados_aio_write_full(c_.io, oid.c_str(), op.completion, src, n);
        keep_or_fail(op, rc);
    }
    // Waits for all; the first failure (or short read) is thrown after every one has finished, so
    // no buffer is written into after this returns or throws.
    void wait() {
        std::string first_error;
        for (Op& op : ops_) {
            rados_aio_wait_for_complete(op.completion);
            const int rc = rados_aio_get_return_value(op.completion);
            rados_aio_release(op.completion);
            op.completion = nullptr;
            if (!first_error.empty()) continue;
            if (rc < 0) first_error = op_failure(c_, op.what, rc);
            else if (op.expect && static_cast<size_t>(rc) != op.expect)
                first_error = c_.describe + ": " + op.what + ": short read (" + std::to_string(rc) + " of " + std::to_string(op.expect) + " bytes)";
        }
        ops_.clear();
        if (!first_error.empty()) throw Error(first_error);
    }

private:
    struct Op {
        rados_completion_t completion;
        size_t expect;  // bytes a read must return; 0 for writes
        std::string what;
    };
    void check_start(int rc, const std::string& what) {
        if (rc < 0) throw Error(op_failure(c_, what, rc));
    }
    void keep_or_fail(Op& op, int rc) {
        if (rc < 0) {
            rados_aio_release(op.completion);
            throw Error(op_failure(c_, op.what, rc));
        }
        ops_.push_back(std::move(op));
    }
    const Connection& c_;
    std::vector<Op> ops_;
};

class RadosBlobReader : public BlobReader {
public:
    RadosBlobReader(std::shared_ptr<const Connection> c, std::string name, BlobShape shape)
        : c_(std::move(c)), name_(std::move(name)), shape_(shape) {}
    uint64_t size() const override { return shape_.size; }
    void read(uint64_t offset, void* dst, size_t n) const override { read_ranges({{offset, dst, n}}); }
    void read_ranges(const std::vector<Range>& ranges) const override {
        AioBatch batch(*c_);
        for (const Range& r : ranges) {
            if (r.offset > shape_.size || r.n > shape_.size - r.offset)
                throw Error(c_->describe + ": '" + printable(name_) + "': read of " + std::to_string(r.n) + " bytes at " +
                            std::to_string(r.offset) + " is past its end (" + std::to_string(shape_.size) + " bytes)");
            // The pieces the range covers (usually one: a record is far smaller than a piece).
            uint64_t at = r.offset;
            char* out = static_cast<char*>(r.dst);
            while (at < r.offset + r.n) {
                const uint64_t k = at / shape_.piece, in = at % shape_.piece;
                const size_t len = static_cast<size_t>(std::min<uint64_t>(shape_.piece - in, r.offset + r.n - at));
                batch.read(piece_name(name_, k), out, len, in, "'" + printable(name_) + "' piece " + std::to_string(k));
                out += len;
                at += len;
            }
        }
        batch.wait();
    }

private:
    std::shared_ptr<const Connection> c_;
    std::string name_;
    BlobShape shape_;
};

// The writer lock: an exclusive cls_lock with a lease, renewed by a thread every third of it.
class RadosWriterLock : public WriterLock {
public:
    RadosWriterLock(std::shared_ptr<const Connection> c, std::string cookie) : c_(std::move(c)), cookie_(std::move(cookie)) {
        renewer_ = std::thread([this] { renew_loop(); });
    }
    ~RadosWriterLock() override {
        {
            std::lock_guard<std::mutex> g(m_);
            stop_ = true;
        }
        cv_.notify_all();
        renewer_.join();
        rados_unlock(c_->io, kLockObject, kLockName, cookie_.c_str());
    }
    void renew() override {
        if (lost_) throw Error(c_->describe + ": this writer lost the bank's writer lock (its lease of " + std::to_string(kLockLeaseSeconds) +
                               " s could not be renewed: " + lost_why_ + "); nothing more is written");
    }

private:
    void renew_loop() {
        std::unique_lock<std::mutex> g(m_);
        while (!cv_.wait_for(g, std::chrono::seconds(kLockLeaseSeconds / 3), [this] { return stop_; })) {
            timeval lease{kLockLeaseSeconds, 0};
            const int rc = rados_lock_exclusive(c_->io, kLockObject, kLockName, cookie_.c_str(), "", &lease, LIBRADOS_LOCK_FLAG_MUST_RENEW);
            if (rc < 0 && !lost_) {
                lost_why_ = rados_error(rc);
                lost_ = true;
            }
        }
    }

    std::shared_ptr<const Connection> c_;
    std::string cookie_;
    std::mutex m_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::atomic<bool> lost_{false};
    std::string lost_why_;
    std::thread renewer_;
};

class RadosStorage : public BankStorage {
public:
    explicit RadosStorage(std::shared_ptr<Connection> c) : c_(std::move(c)) {}

    std::string describe() const override { return c_->describe; }

    std::optional<std::string> read_blob(const std::string& name, uint64_t max_bytes) const override {
        check_name(*c_, name);
        const std::optional<BlobShape> shape = blob_shape(*c_, name);
        if (!shape) return std::nullopt;
        if (shape->size > max_bytes)
            throw Error(where(name) + ": " + std::to_string(shape->size) + " bytes, more than the " + std::to_string(max_bytes) + " it may have");
        std::string bytes(shape->size, '\0');
        if (!bytes.empty()) RadosBlobReader(c_, name, *shape).read(0, bytes.data(), bytes.size());
        return bytes;
    }

    std::unique_ptr<BlobReader> open_blob(const std::string& name) const override {
        check_name(*c_, name);
        const std::optional<BlobShape> shape = blob_shape(*c_, name);
        if (!shape) throw Error(where(name) + ": does not exist");
        return std::make_unique<RadosBlobReader>(c_, name, *shape);
    }

    bool exists(const std::string& name) const override {
        check_name(*c_, name);
        uint64_t size = 0;
        time_t mtime = 0;
        const int rc = rados_stat(c_->io, name.c_str(), &size, &mtime);
        if (rc == -ENOENT) return false;
        if (rc < 0) throw Error(op_failure(*c_, "'" + printable(name) + "'", rc));
        return true;
    }

    // Blob names: every head, and the blob of any piece without its head (what an interrupted
    // write left), so that the writers' clean-up finds and removes it.
    std::vector<std::string> list() const override {
        rados_list_ctx_t ctx = nullptr;
        int rc = rados_nobjects_list_open(c_->io, &ctx);
        if (rc < 0) throw Error(op_failure(*c_, "cannot list", rc));
        std::set<std::string> names;
        const char* entry = nullptr;
        while ((rc = rados_nobjects_list_next(ctx, &entry, nullptr, nullptr)) == 0) {
            const std::string oid(entry);
            if (oid.empty() || oid[0] == '.') continue;
            names.insert(oid.substr(0, oid.find('@')));
        }
        rados_nobjects_list_close(ctx);
        if (rc != -ENOENT) throw Error(op_failure(*c_, "cannot list", rc));
        return {names.begin(), names.end()};
    }

    void write_blob(const std::string& name, std::string_view bytes) override {
        check_name(*c_, name);
        if (exists(name)) throw Error(where(name) + ": already exists (blobs are immutable)");
        const uint64_t pieces = std::max<uint64_t>(1, (bytes.size() + kRadosObjectBytes - 1) / kRadosObjectBytes);
        {
            AioBatch batch(*c_);
            for (uint64_t k = 1; k < pieces; ++k) {
                const size_t off = static_cast<size_t>(k * kRadosObjectBytes);
                const size_t len = std::min<size_t>(kRadosObjectBytes, bytes.size() - off);
                batch.write_full(piece_name(name, k), bytes.data() + off, len, "'" + printable(name) + "' piece " + std::to_string(k));
            }
            batch.wait();
        }
        // The head last: from this op on the blob exists, whole.
        const std::string shape = std::to_string(bytes.size()) + " " + std::to_string(kRadosObjectBytes);
        rados_write_op_t op = rados_create_write_op();
        rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
        rados_write_op_write_full(op, bytes.data(), static_cast<size_t>(std::min<uint64_t>(bytes.size(), kRadosObjectBytes)));
        rados_write_op_setxattr(op, kBlobXattr, shape.data(), shape.size());
        const int rc = rados_write_op_operate(op, c_->io, name.c_str(), nullptr, 0);
        rados_release_write_op(op);
        if (rc == -EEXIST) throw Error(where(name) + ": already exists (blobs are immutable; another writer wrote it meanwhile)");
        if (rc < 0) throw Error(op_failure(*c_, "cannot write '" + printable(name) + "'", rc));
    }

    void publish_pointer(const std::string& name, std::string_view bytes, const std::optional<std::string>& expected) override {
        check_name(*c_, name);
        if (bytes.size() > kMaxPointerBytes) throw Error(where(name) + ": a pointer is at most " + std::to_string(kMaxPointerBytes) + " bytes");
        const std::string shape = std::to_string(bytes.size()) + " " + std::to_string(kRadosObjectBytes);
        rados_write_op_t op = rados_create_write_op();
        if (expected) rados_write_op_cmpxattr(op, kPointerXattr, LIBRADOS_CMPXATTR_OP_EQ, expected->data(), expected->size());
        else rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
        rados_write_op_write_full(op, bytes.data(), bytes.size());
        rados_write_op_setxattr(op, kPointerXattr, bytes.data(), bytes.size());
        rados_write_op_setxattr(op, kBlobXattr, shape.data(), shape.size());
        const int rc = rados_write_op_operate(op, c_->io, name.c_str(), nullptr, 0);
        rados_release_write_op(op);
        // The compare failing (ECANCELED), or the object gone or already there: someone else's
        // publish came between this writer's read and its swap.
        if (rc == -ECANCELED || (expected && rc == -ENOENT) || (!expected && rc == -EEXIST))
            throw PointerConflict(where(name) + ": changed since this writer read it (another writer published meanwhile)");
        if (rc < 0) throw Error(op_failure(*c_, "cannot publish '" + printable(name) + "'", rc));
    }

    std::unique_ptr<WriterLock> lock_writer(const std::string& who) override {
        std::random_device rd;
        const std::string cookie = "mnemo-" + std::to_string(rd()) + "-" + std::to_string(rd());
        timeval lease{kLockLeaseSeconds, 0};
        const int rc = rados_lock_exclusive(c_->io, kLockObject, kLockName, cookie.c_str(), "mnemo-kb writer", &lease, 0);
        if (rc == -EBUSY) {
            char holder[512] = {};
            const int got = rados_getxattr(c_->io, kLockObject, kHolderXattr, holder, sizeof holder - 1);
            throw Error(c_->describe + ": another writer is writing this bank (" + (got > 0 ? printable(std::string(holder, size_t(got)), 200) : std::string("unknown")) +
                        "); one writer at a time: try again when it has finished (a writer that died releases it within " +
                        std::to_string(kLockLeaseSeconds) + " s)");
        }
        if (rc < 0) throw Error(op_failure(*c_, "cannot take the writer lock", rc));
        // Who holds it, for the message above; failing to say is no reason to fail the write.
        rados_setxattr(c_->io, kLockObject, kHolderXattr, who.data(), who.size());
        return std::make_unique<RadosWriterLock>(c_, cookie);
    }

    void remove_blob(const std::string& name) override {
        check_name(*c_, name);
        std::optional<BlobShape> shape;
        try {
            shape = blob_shape(*c_, name);
        } catch (const Error&) {
            // Not readable as a blob: still removed, pieces found by listing below.
        }
        // The head first: the blob stops existing at once; its pieces are garbage after that.
        int rc = rados_remove(c_->io, name.c_str());
        if (rc < 0 && rc != -ENOENT) throw Error(op_failure(*c_, "cannot remove '" + printable(name) + "'", rc));
        std::set<std::string> pieces;
        if (shape)
            for (uint64_t k = 1; k * shape->piece < shape->size; ++k) pieces.insert(piece_name(name, k));
        else
            pieces = orphan_pieces(name);
        for (const std::string& p : pieces) {
            rc = rados_remove(c_->io, p.c_str());
            if (rc < 0 && rc != -ENOENT) throw Error(op_failure(*c_, "cannot remove '" + printable(p) + "'", rc));
        }
    }

private:
    std::string where(const std::string& name) const { return c_->describe + ": '" + printable(name) + "'"; }

    std::set<std::string> orphan_pieces(const std::string& name) const {
        std::set<std::string> out;
        rados_list_ctx_t ctx = nullptr;
        if (rados_nobjects_list_open(c_->io, &ctx) < 0) return out;
        const char* entry = nullptr;
        const std::string prefix = name + "@";
        while (rados_nobjects_list_next(ctx, &entry, nullptr, nullptr) == 0)
            if (std::string_view(entry).substr(0, prefix.size()) == prefix) out.insert(entry);
        rados_nobjects_list_close(ctx);
        return out;
    }

    std::shared_ptr<Connection> c_;
};

void set_option(const Connection& c, const char* key, const std::string& value) {
    const int rc = rados_conf_set(c.cluster, key, value.c_str());
    if (rc < 0) throw Error(c.describe + ": cannot set the Ceph option " + key + "=" + printable(value) + ": " + rados_error(rc));
}

}  // namespace

bool rados_supported() { return true; }

std::shared_ptr<BankStorage> open_rados_storage(const RadosLocation& where, const CephClientOptions& o) {
    auto c = std::make_shared<Connection>();
    c->describe = "RADOS pool '" + printable(where.pool) + "'" + (where.ns.empty() ? std::string() : " namespace '" + printable(where.ns) + "'");
    c->user = "client." + (o.user.empty() ? std::string("admin") : o.user);
    int rc = rados_create(&c->cluster, o.user.empty() ? nullptr : o.user.c_str());
    if (rc < 0) throw Error(c->describe + ": cannot create a Ceph client: " + rados_error(rc));
    // No config file given: librados's search ($CEPH_CONF, /etc/ceph/ceph.conf, ~/.ceph/config).
    rc = rados_conf_read_file(c->cluster, o.conf.empty() ? nullptr : o.conf.c_str());
    if (rc < 0)
        throw Error(c->describe + ": cannot read the Ceph config " +
                    (o.conf.empty() ? std::string("($CEPH_CONF or /etc/ceph/ceph.conf; --ceph-conf names one)") : "'" + printable(o.conf) + "'") +
                    ": " + rados_error(rc));
    if (!o.keyring.empty()) set_option(*c, "keyring", o.keyring);
    // librados's own log lines ("monclient(hunting): handle_auth_bad_method …") would interleave
    // with the commands' output; every failure reaches the user as an Error in words instead.
    set_option(*c, "log_to_stderr", "false");
    set_option(*c, "err_to_stderr", "false");
    const std::string connect_timeout = std::to_string(o.connect_timeout_seconds);
    set_option(*c, "client_mount_timeout", connect_timeout);
    set_option(*c, "rados_mon_op_timeout", connect_timeout);
    set_option(*c, "rados_osd_op_timeout", std::to_string(o.op_timeout_seconds));
    rc = rados_connect(c->cluster);
    if (rc < 0) {
        // ENOENT comes at once when librados finds no key for the user (no keyring, or none
        // holding client.ID): said as such, not as a cluster that does not answer.
        const std::string why = rc == -ENOENT ? "no key for " + c->user + " (no keyring found" +
                                                    (o.keyring.empty() ? std::string(" where the config says; --ceph-keyring names one") : " in '" + printable(o.keyring) + "'") +
                                                    ", or it holds no key of that user)"
                                : rc == -ETIMEDOUT || rc == -EINTR
                                    ? "the cluster's monitors did not answer within " + connect_timeout + " s (is the cluster up? the config's mon_host?)"
                                    : rc == -EACCES || rc == -EPERM ? "the monitors refused the key of " + c->user + " (wrong keyring or user?)"
                                                                    : rados_error(rc);
        throw Error(c->describe + ": cannot connect to the Ceph cluster: " + why);
    }
    rc = rados_ioctx_create(c->cluster, where.pool.c_str(), &c->io);
    if (rc == -ENOENT)
        throw Error(c->describe + ": the pool does not exist (an administrator creates it: `ceph osd pool create " + printable(where.pool) +
                    "` and `ceph osd pool application enable " + printable(where.pool) + " mnemo`)");
    if (rc < 0) throw Error(op_failure(*c, "cannot open the pool", rc));
    if (!where.ns.empty()) rados_ioctx_set_namespace(c->io, where.ns.c_str());
    return std::make_shared<RadosStorage>(std::move(c));
}

}  // namespace mnemo::kb
