// A bank's blobs on a Ceph RADOS pool (librados): the BankStorage contract of bank_storage.hpp
// over a strongly consistent, replicated object store, so that any number of `mnemo-kb serve`
// nodes can serve one bank and a bank can outgrow one machine (docs/kb-storage.md, "On Ceph
// RADOS"). Built only when librados is found (CMake option MNEMO_KB_RADOS); without it,
// open_rados_storage() says so.
#pragma once

#include <memory>
#include <string>

#include "bank/bank_storage.hpp"

namespace mnemo::kb {

// Where: a pool and, inside it, a RADOS namespace (one bank per namespace, so `rados -p POOL -N NS
// ls` lists exactly one bank's objects).
struct RadosLocation {
    std::string pool;
    std::string ns;  // empty: the pool's default namespace
};

// How to reach the cluster. Empty fields take librados's defaults: the config from $CEPH_CONF or
// /etc/ceph/ceph.conf, the keyring the config names, the user "admin".
struct CephClientOptions {
    std::string conf;     // ceph.conf path
    std::string keyring;  // keyring path
    std::string user;     // cephx user id without "client." ("mnemo")
    // Bounds on every wait, so an unreachable cluster is an error, never a hang: connecting and
    // monitor calls, and each object operation (an OSD that stops is replaced by its replica
    // within Ceph's heartbeat grace, well inside this).
    int connect_timeout_seconds = 10;
    int op_timeout_seconds = 30;
};

// The object size blobs are cut into (docs/kb-storage.md says why 4 MiB).
constexpr uint64_t kRadosObjectBytes = uint64_t{4} << 20;

// Whether this build has librados.
bool rados_supported();

// Connects and opens the pool. mnemo::Error when the cluster is unreachable, the config or keyring
// cannot be read, the key is refused, or the pool does not exist (each said in those words). A
// pool is never created here: that takes monitor capabilities a bank writer should not need.
std::shared_ptr<BankStorage> open_rados_storage(const RadosLocation& where, const CephClientOptions& options);

}  // namespace mnemo::kb
