#include "app/folder_documents.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace mnemo::app {
namespace {

// A line of references.jsonl holds one reference's tokens and text: far below this (as the
// engine's reader caps it).
constexpr size_t kMaxLineBytes = 1 << 20;

std::string optional_string(const json::Value& v, const char* key, const std::string& where) {
    const json::Value* f = v.find(key);
    if (!f) return {};
    if (!f->is_string()) throw Error(where + ": '" + key + "' must be a string");
    return f->as_string();
}

}  // namespace

std::vector<FolderDocument> list_folder_documents(const std::string& folder) {
    const std::filesystem::path file = std::filesystem::path(folder) / "references.jsonl";
    const std::string where = "memory folder '" + folder + "': references.jsonl";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) throw Error(where + " is missing (not a memory folder?)");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(where + ": cannot be opened");
    std::vector<FolderDocument> docs;
    std::unordered_map<std::string, size_t> index;
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
        const std::string lwhere = where + ":" + std::to_string(n);
        if (line.size() > kMaxLineBytes) throw Error(lwhere + ": longer than " + std::to_string(kMaxLineBytes) + " bytes");
        if (line.empty()) continue;
        const json::Value v = json::parse(line, lwhere);
        if (!v.is_object()) throw Error(lwhere + ": expected an object");
        const std::string id = optional_string(v, "doc_id", lwhere);
        auto [it, fresh] = index.emplace(id, docs.size());
        if (fresh) {
            FolderDocument d;
            d.doc_id = id;
            d.title = optional_string(v, "title", lwhere);
            d.source = optional_string(v, "source", lwhere);
            docs.push_back(std::move(d));
        }
        FolderDocument& d = docs[it->second];
        ++d.references;
        if (const json::Value* t = v.find("tokens"); t && t->is_array()) d.tokens += t->size();
    }
    return docs;
}

RemovedDocuments remove_folder_documents(const std::string& folder, const std::vector<std::string>& doc_ids) {
    if (doc_ids.empty()) throw Error("memory folder '" + folder + "': no document to remove was given");
    const std::set<std::string> remove(doc_ids.begin(), doc_ids.end());
    MemoryFolderContents c = read_memory_folder(folder);
    std::set<std::string> found;
    RemovedDocuments r;
    std::vector<WrittenMemory> memories;
    std::vector<MemoryReference> references;
    for (size_t i = 0; i < c.references.size(); ++i) {
        if (remove.count(c.references[i].doc_id)) {
            found.insert(c.references[i].doc_id);
            ++r.references;
            continue;
        }
        memories.push_back(std::move(c.memories[i]));
        references.push_back(std::move(c.references[i]));
    }
    for (const std::string& id : remove)
        if (!found.count(id))
            throw Error("memory folder '" + folder + "' holds no document '" + printable(id, 200) + "'; nothing was removed");
    r.documents = found.size();
    r.remaining = references.size();
    write_memory_folder(folder, c.model, memories, references, /*replace=*/true, c.codec.get());
    return r;
}

}  // namespace mnemo::app
