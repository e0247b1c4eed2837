#include "serve/add_documents_input.hpp"

#include "mnemo/io/file_read.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

using grpc::Status;
using grpc::StatusCode;

Status invalid(const std::string& message) { return Status(StatusCode::INVALID_ARGUMENT, message); }

// The byte offset of the first byte that makes `text` invalid UTF-8 (text.size() when valid): the
// error then points at the place, not only the document.
size_t first_invalid_utf8(std::string_view text) {
    if (is_valid_utf8(text)) return text.size();
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
        if (n == 0 || i + n > text.size() || !is_valid_utf8(text.substr(i, n))) return i;
        i += n;
    }
    return text.size();
}

}  // namespace

Status check_doc_id(std::string_view id, const std::string& where) {
    if (id.empty()) return invalid(where + ": doc_id is empty; every document needs an id (a file path, a JSONL id)");
    if (id.size() > ServeLimits::kMaxDocIdBytes)
        return invalid(where + ": doc_id is " + std::to_string(id.size()) + " bytes; at most " + std::to_string(ServeLimits::kMaxDocIdBytes));
    for (size_t i = 0; i < id.size(); ++i) {
        const auto c = static_cast<unsigned char>(id[i]);
        if (c < 0x20 || c == 0x7F)
            return invalid(where + ": doc_id has a control character at byte " + std::to_string(i) + " ('" + printable(id, 80) + "')");
    }
    return Status::OK;
}

std::string AddDocumentsInput::where(size_t index) const {
    std::string w = "documents[" + std::to_string(index) + "]";
    if (index < docs_.size() && !docs_[index].doc_id.empty()) w += " ('" + printable(docs_[index].doc_id, 80) + "')";
    return w;
}

Status AddDocumentsInput::close_document() {
    if (!open_) return Status::OK;
    open_ = false;
    const size_t i = docs_.size() - 1;
    const std::string& text = docs_[i].text;
    if (text.find_first_not_of(" \t\r\n") == std::string::npos)
        return invalid(where(i) + ": text is empty; to retire a document use DeleteDocuments");
    if (const size_t bad = first_invalid_utf8(text); bad != text.size())
        return invalid(where(i) + ": text is not valid UTF-8 (first bad byte at offset " + std::to_string(bad) + ")");
    return Status::OK;
}

Status AddDocumentsInput::add(const v1::AddDocumentsRequest& m) {
    if (m.total_documents() != 0) {
        if (m.total_documents() > limits_.max_add_documents)
            return invalid("total_documents is " + std::to_string(m.total_documents()) + "; this server takes at most " +
                           std::to_string(limits_.max_add_documents) + " documents per call (max_add_documents)");
        announced_ = m.total_documents();
    }
    if (m.continued()) {
        if (!open_) return invalid("a message with continued = true came before any document (the first message of a document has continued = false)");
        const size_t i = docs_.size() - 1;
        if (!m.doc_id().empty() || !m.title().empty() || !m.source().empty() || m.title_guessed())
            return invalid(where(i) + ": a continuing message (continued = true) carries only text; doc_id, title, title_guessed and source go in the document's first message");
    } else {
        if (Status st = close_document(); !st.ok()) return st;
        const size_t i = docs_.size();
        if (i >= limits_.max_add_documents)
            return invalid("documents[" + std::to_string(i) + "]: more than " + std::to_string(limits_.max_add_documents) +
                           " documents in one call (max_add_documents); send the rest in another call");
        const std::string w = "documents[" + std::to_string(i) + "]";
        if (Status st = check_doc_id(m.doc_id(), w); !st.ok()) return st;
        if (m.title().size() > ServeLimits::kMaxTitleBytes || m.source().size() > ServeLimits::kMaxTitleBytes)
            return invalid(w + " ('" + printable(m.doc_id(), 80) + "'): " + (m.title().size() > ServeLimits::kMaxTitleBytes ? "title" : "source") +
                           " is longer than " + std::to_string(ServeLimits::kMaxTitleBytes) + " bytes");
        if (!ids_.insert(m.doc_id()).second)
            return invalid(w + ": doc_id '" + printable(m.doc_id(), 80) + "' was already sent in this call; each document once");
        app::CorpusDocument d;
        d.doc_id = m.doc_id();
        d.title = m.title().empty() ? m.doc_id() : m.title();
        d.title_given = !m.title().empty() && !m.title_guessed();
        d.source = m.source().empty() ? m.doc_id() : m.source();
        docs_.push_back(std::move(d));
        open_ = true;
    }
    const size_t i = docs_.size() - 1;
    std::string& text = docs_[i].text;
    if (text.size() + m.text().size() > kMaxDocumentFileBytes)
        return invalid(where(i) + ": text is longer than " + std::to_string(kMaxDocumentFileBytes) + " bytes (the largest document)");
    bytes_ += m.text().size();
    if (bytes_ > limits_.max_add_bytes)
        return invalid(where(i) + ": the call's texts exceed " + std::to_string(limits_.max_add_bytes) + " bytes (max_add_bytes); send the rest in another call");
    text += m.text();
    return Status::OK;
}

Status AddDocumentsInput::finish() {
    if (Status st = close_document(); !st.ok()) return st;
    if (docs_.empty()) return invalid("the call sent no document");
    if (announced_ != 0 && announced_ != docs_.size())
        return invalid("the stream ended after " + std::to_string(docs_.size()) + " of the " + std::to_string(announced_) +
                       " documents total_documents announced; nothing was added");
    return Status::OK;
}

}  // namespace mnemo::kb
