#include "bank_documents.hpp"

#include <algorithm>
#include <unordered_map>

namespace mnemo::kb {

BankDocuments::BankDocuments(uint64_t count, const std::function<std::pair<const std::string*, uint64_t>(uint32_t)>& doc_of,
                             const std::function<bool(uint32_t)>& live) {
    std::unordered_map<std::string, size_t> at;
    for (uint64_t i = 0; i < count; ++i) {
        const auto id = static_cast<uint32_t>(i);
        if (!live(id)) continue;
        const auto [doc_id, version] = doc_of(id);
        auto [it, fresh] = at.emplace(*doc_id, docs_.size());
        if (fresh) docs_.push_back({*doc_id, version, {}});
        BankDocument& d = docs_[it->second];
        d.version = std::max(d.version, version);
        d.ids.push_back(id);
    }
    std::sort(docs_.begin(), docs_.end(), [](const BankDocument& a, const BankDocument& b) { return a.doc_id < b.doc_id; });
}

const BankDocument* BankDocuments::find(const std::string& doc_id) const {
    auto it = std::lower_bound(docs_.begin(), docs_.end(), doc_id, [](const BankDocument& d, const std::string& k) { return d.doc_id < k; });
    return it != docs_.end() && it->doc_id == doc_id ? &*it : nullptr;
}

}  // namespace mnemo::kb
