#include "store_location.hpp"

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {

std::optional<RadosLocation> parse_rados_location(const std::string& location) {
    static const std::string scheme = "rados://";
    if (location.compare(0, scheme.size(), scheme) != 0) return std::nullopt;
    const std::string rest = location.substr(scheme.size());
    const size_t slash = rest.find('/');
    RadosLocation r;
    r.pool = rest.substr(0, slash);
    if (slash != std::string::npos) r.ns = rest.substr(slash + 1);
    const auto bad = [](const std::string& s) {
        for (const char ch : s)
            if (static_cast<unsigned char>(ch) <= ' ' || ch == '/' || ch == '@') return true;
        return false;
    };
    if (r.pool.empty() || bad(r.pool) || bad(r.ns) || (slash != std::string::npos && r.ns.empty()))
        throw Error("bank location '" + printable(location) + "': expected rados://POOL or rados://POOL/NAMESPACE (no spaces, '/' or '@' in either)");
    return r;
}

std::shared_ptr<BankStorage> open_bank_storage(const std::string& location, const StoreOptions& options, bool create) {
    if (const std::optional<RadosLocation> r = parse_rados_location(location)) return open_rados_storage(*r, options.ceph);
    return open_folder_storage(location, create);
}

}  // namespace mnemo::kb
