// Where a bank lives, as users write it: a folder path, or "rados://POOL[/NAMESPACE]" for a bank on
// a Ceph RADOS pool (docs/kb-storage.md). Every mnemo-kb command that takes a BANK takes either,
// and opens it through open_bank_storage(), so the commands never know which store they write.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "bank_storage.hpp"
#include "store/rados_storage.hpp"

namespace mnemo::kb {

struct StoreOptions {
    CephClientOptions ceph;  // only for rados:// locations
};

// "rados://POOL[/NAMESPACE]" -> the pool and namespace; nothing for anything else (a folder).
// A malformed rados:// location (no pool, a '/' in the namespace, spaces) is an error saying the form.
std::optional<RadosLocation> parse_rados_location(const std::string& location);

// Opens the bank's store. create: a folder that does not exist is made (build); a RADOS pool must
// exist already. mnemo::Error names the location and what is wrong.
std::shared_ptr<BankStorage> open_bank_storage(const std::string& location, const StoreOptions& options, bool create);

}  // namespace mnemo::kb
