// What `mnemo-kb build` and `add` read: a corpus of documents, cut into the model's references.
//   - a folder: every .txt and .md file below it, in path order; doc_id and source are the path
//     relative to the folder, the title is the first non-blank line (a Markdown "#" heading's
//     marks removed) or else the file's stem. Linked sub-folders are not entered; a linked file
//     is read when it resolves inside the folder (see CorpusOptions);
//   - a .jsonl file: one {"id", "text", optional "title", "source", "metadata" (an object)} per
//     line; doc_id is the id (a string or an integer; two lines with one id are an error), the
//     title defaults to the id and the source to the file's name.
// A document is split into paragraphs at blank lines (app/paragraphs.hpp, as `mnemo memorize`),
// each paragraph tokenized and cut into pieces of at most reference_length tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo {
class Tokenizer;
}

namespace mnemo::app {

struct CorpusDocument {
    std::string doc_id;
    std::string title;
    std::string source;
    std::string text;
    std::string metadata_json;  // the JSONL line's "metadata" object as JSON text, or empty
    // The title was given as one (a JSONL line's "title", a Markdown "#" heading, an AddDocuments
    // call's title): BM25 counts it with each reference (mnemo/memory/retrieval_terms.hpp). A
    // title taken from a plain text's first line (a sentence as often as a heading: counted with
    // every paragraph it would rank them all as that sentence), a file's name or an id is shown
    // with the references, not counted.
    bool title_given = false;
};

// A file's title: its first non-blank line without Markdown heading marks (given: it was a
// heading), capped at 200 bytes so a title stays a title, else `fallback` (not given).
struct DocumentTitle {
    std::string text;
    bool given = false;
};
DocumentTitle title_of(const std::string& text, const std::string& fallback);

struct CorpusReference {
    size_t document = 0;          // index into the documents
    std::vector<int32_t> tokens;  // what the model memorizes and BM25 counts
    std::string text;             // the tokens decoded
    // The document's title tokenized when it was given (CorpusDocument::title_given), else empty:
    // BM25 counts them with `tokens` (mnemo/memory/retrieval_terms.hpp).
    std::vector<int32_t> title_tokens;
};

struct CorpusOptions {
    // A folder corpus reads only files inside the folder: a symbolic link (or a path that
    // resolves) to a file outside it is refused, naming the link and its target, since a corpus
    // handed over by someone else could otherwise pull any file the builder can read into a
    // bank that is then served. True reads such files too (`--follow-external-links`).
    bool follow_external_links = false;
};

// Errors name the file and line. Files are read through mnemo::read_file_capped (regular files
// only, at most kMaxDocumentFileBytes each).
std::vector<CorpusDocument> read_corpus(const std::string& path, const CorpusOptions& options = {});
std::vector<CorpusReference> cut_references(const std::vector<CorpusDocument>& docs, const Tokenizer& tok, int32_t reference_length);

}  // namespace mnemo::app
