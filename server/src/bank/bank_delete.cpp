#include "bank_delete.hpp"

#include <unordered_set>

#include "bank.hpp"
#include "bank_retired.hpp"
#include "bank_version_writer.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {

BankDeleteReport delete_documents(const std::shared_ptr<BankStorage>& storage, const std::vector<std::string>& doc_ids) {
    if (!storage) throw Error("delete: no bank storage");
    const std::string where = "bank " + storage->describe();
    if (doc_ids.empty()) throw Error(where + ": no document ids to delete");
    // Opened whole (every hash checked): a new version is never published on a damaged one.
    const std::shared_ptr<const Bank> bank = Bank::open(storage);
    std::vector<uint32_t> retire;
    std::vector<std::string> missing;
    std::unordered_set<std::string> seen;
    BankDeleteReport r;
    for (const std::string& id : doc_ids) {
        if (!seen.insert(id).second) continue;
        const BankDocument* d = bank->documents().find(id);
        if (!d) {
            // Appended, not "'" + s + "'": GCC 12 warns falsely (-Wrestrict) on that form here.
            missing.push_back(std::string("'").append(printable(id, 200)).append("'"));
            continue;
        }
        retire.insert(retire.end(), d->ids.begin(), d->ids.end());
        ++r.documents;
    }
    if (!missing.empty()) {
        std::string list;
        for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
        throw Error(where + " version " + std::to_string(bank->version()) + " has no document " + list + " (of its " +
                    std::to_string(bank->documents().all().size()) +
                    " documents; ids are what build/add named them: a corpus file's path in its folder, a JSONL id; "
                    "`mnemo-kb documents` lists them); nothing was deleted");
    }
    VersionWriter w(*storage);
    if (!w.current() || w.current()->version != bank->version())
        throw Error(where + ": version " + std::to_string(w.version() - 1) + " was published while version " + std::to_string(bank->version()) +
                    " was read; run the command again");
    BankManifest m = *w.current();
    m.retired = retire_ids(m.retired, retire);
    r.retired_records = retire.size();
    const WrittenVersion wv = w.publish(std::move(m));
    r.version = wv.manifest.version;
    r.bytes_written = wv.bytes_written;
    for (const IdRange& x : wv.manifest.retired) r.retired_total += x.count;
    r.live_records = wv.manifest.count - r.retired_total;
    return r;
}

}  // namespace mnemo::kb
