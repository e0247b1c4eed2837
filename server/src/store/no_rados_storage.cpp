// This build has no librados (CMake found no librados-dev): a rados:// location is refused with
// the reason, never treated as a folder.
#include "mnemo/error.hpp"
#include "store/rados_storage.hpp"

namespace mnemo::kb {

bool rados_supported() { return false; }

std::shared_ptr<BankStorage> open_rados_storage(const RadosLocation& where, const CephClientOptions&) {
    throw Error("RADOS pool '" + where.pool + "': this mnemo-kb was built without Ceph RADOS support (install librados-dev and rebuild; "
                "CMake option MNEMO_KB_RADOS)");
}

}  // namespace mnemo::kb
