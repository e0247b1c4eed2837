#include "app/corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "app/paragraphs.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
    try {
        return read_file_capped(p.string(), kMaxDocumentFileBytes, "corpus file");
    } catch (const std::exception& e) {
        throw Error("corpus: " + printable(e.what()));
    }
}

// True when `target` (canonical) is `root` (canonical) or below it.
bool is_inside(const fs::path& root, const fs::path& target) {
    auto r = root.begin();
    for (auto t = target.begin(); r != root.end(); ++r, ++t)
        if (t == target.end() || *r != *t) return false;
    return true;
}

std::string trim(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r");
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::vector<CorpusDocument> read_folder(const fs::path& dir, const CorpusOptions& options) {
    const std::string where = "corpus folder '" + printable(dir.string()) + "'";
    std::error_code ec;
    const fs::path root = fs::canonical(dir, ec);
    if (ec) throw Error(where + ": " + ec.message());
    std::vector<fs::path> files;
    // Linked sub-folders are not entered (directory_options::none); linked files are listed and
    // checked below like every other file.
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::path& p = it->path();
        std::error_code type_ec;
        if (it->is_regular_file(type_ec) && (p.extension() == ".txt" || p.extension() == ".md")) files.push_back(p);
    }
    if (ec) throw Error(where + ": " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw Error(where + " holds no .txt or .md file");
    std::vector<CorpusDocument> docs;
    for (const fs::path& p : files) {
        CorpusDocument d;
        // Lexical: fs::relative() would resolve a link and name its target instead of the file.
        d.doc_id = d.source = p.lexically_relative(dir).generic_string();
        // The file's real place, resolved now and read by that name: a link (or a folder swapped
        // for one since the listing) leading outside the corpus folder is caught here.
        const fs::path target = fs::canonical(p, ec);
        if (ec) throw Error(where + ": '" + printable(d.source) + "': " + ec.message());
        if (!options.follow_external_links && !is_inside(root, target))
            throw Error(where + ": '" + printable(d.source) + "' is a link to '" + printable(target.string()) +
                        "', outside the corpus folder; refused (give --follow-external-links to read files outside it)");
        d.text = read_file(target);
        DocumentTitle title = title_of(d.text, p.stem().string());
        d.title = std::move(title.text);
        d.title_given = title.given;
        docs.push_back(std::move(d));
    }
    return docs;
}

std::string optional_string(const json::Value& v, const char* key, const std::string& where, const std::string& fallback) {
    const json::Value* f = v.find(key);
    if (!f || f->is_null()) return fallback;
    if (!f->is_string()) throw Error(where + ": '" + key + "' must be a string");
    return f->as_string();
}

std::vector<CorpusDocument> read_jsonl(const fs::path& file) {
    const std::string bytes = read_file(file);
    std::vector<CorpusDocument> docs;
    std::unordered_map<std::string, size_t> line_of;  // doc_id -> its line
    std::istringstream in(bytes);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (trim(line).empty()) continue;
        const std::string where = "corpus '" + printable(file.string()) + "': line " + std::to_string(n);
        const json::Value v = json::parse(line, where);
        if (!v.is_object()) throw Error(where + ": expected a JSON object");
        CorpusDocument d;
        const json::Value* id = v.find("id");
        if (!id) throw Error(where + ": missing 'id'");
        if (id->is_string()) d.doc_id = id->as_string();
        else if (id->is_integer()) d.doc_id = std::to_string(id->as_int());
        else throw Error(where + ": 'id' must be a string or an integer");
        const json::Value* text = v.find("text");
        if (!text || !text->is_string()) throw Error(where + ": missing string 'text'");
        d.text = text->as_string();
        d.title = optional_string(v, "title", where, d.doc_id);
        const json::Value* title = v.find("title");
        d.title_given = title && title->is_string() && !title->as_string().empty();
        d.source = optional_string(v, "source", where, file.filename().string());
        if (const json::Value* m = v.find("metadata"); m && !m->is_null()) {
            if (!m->is_object()) throw Error(where + ": 'metadata' must be an object");
            d.metadata_json = m->dump();
        }
        // One document per id: `add` replaces a bank's document by its id, so two lines with one
        // id would leave which text is current to chance.
        if (auto [it, fresh] = line_of.emplace(d.doc_id, n); !fresh)
            throw Error(where + ": id '" + printable(d.doc_id, 200) + "' is already the id of line " + std::to_string(it->second) +
                        "; each document needs an id of its own");
        docs.push_back(std::move(d));
    }
    if (docs.empty()) throw Error("corpus '" + printable(file.string()) + "' holds no document");
    return docs;
}

}  // namespace

DocumentTitle title_of(const std::string& text, const std::string& fallback) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::string t = trim(line);
        if (t.empty()) continue;
        const size_t hashes = t.find_first_not_of('#');
        const bool heading = hashes != std::string::npos && hashes > 0 && t[hashes] == ' ';
        if (heading) t = trim(t.substr(hashes));
        if (t.empty()) continue;
        if (t.size() > 200) {
            size_t cut = 200;
            while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
            t = t.substr(0, cut);
        }
        return {t, heading};
    }
    return {fallback, false};
}

std::vector<CorpusDocument> read_corpus(const std::string& path, const CorpusOptions& options) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return read_folder(path, options);
    if (!fs::exists(path, ec)) throw Error("corpus '" + printable(path) + "' does not exist");
    if (fs::path(path).extension() != ".jsonl")
        throw Error("corpus '" + printable(path) + "': expected a folder of .txt/.md files or a .jsonl file");
    return read_jsonl(path);
}

std::vector<CorpusReference> cut_references(const std::vector<CorpusDocument>& docs, const Tokenizer& tok, int32_t reference_length) {
    if (reference_length < 1) throw Error("corpus: the model's reference_length is " + std::to_string(reference_length));
    const auto len = static_cast<size_t>(reference_length);
    std::vector<CorpusReference> out;
    for (size_t d = 0; d < docs.size(); ++d) {
        const std::vector<int32_t> title = docs[d].title_given ? tok.encode(docs[d].title, /*parse_special=*/false) : std::vector<int32_t>{};
        for (const std::string& para : app::split_paragraphs(docs[d].text)) {
            const std::vector<int32_t> ids = tok.encode(para, /*parse_special=*/false);
            for (size_t i = 0; i < ids.size(); i += len) {
                CorpusReference r;
                r.document = d;
                r.title_tokens = title;
                r.tokens.assign(ids.begin() + static_cast<long>(i), ids.begin() + static_cast<long>(std::min(ids.size(), i + len)));
                r.text = tok.decode(r.tokens, /*skip_special=*/false);
                out.push_back(std::move(r));
            }
        }
    }
    return out;
}

}  // namespace mnemo::app
