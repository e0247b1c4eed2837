// The BM25 index as a blob of the bank (server/README.md, "Retrieval index"): written by every
// writer for its version, named in the manifest with its SHA-256 and size, and loaded at open
// instead of re-reading every reference's tokens and rebuilding the postings.
//
// Layout, every integer little-endian:
//   0   "MNEMBM25"           magic
//   8   u32 format           1
//   12  u32 flags            0
//   16  u64 id_count         the version's record count: lengths cover every id
//   24  u64 documents        BM25's N: ids that are documents of the index (the live records)
//   32  u64 total_length     their tokens (the average length is total_length / documents)
//   40  u64 terms
//   48  u64 postings
//   56  i32 lengths[id_count]          a document's tokens; -1: not a document (retired)
//       {i32 term, u32 df}[terms]      ascending terms; df = the term's postings, >= 1
//       {u32 doc, u32 tf}[postings]    each term's postings in turn, ascending doc, tf >= 1
// The parser checks every invariant the scorer relies on (ascending terms and documents, ids in
// range, each document's term frequencies adding up to its length, N and the total matching the
// lengths), so what it accepts cannot make a query read out of bounds. The bank hashes the blob
// before parsing it; the parser does not rely on that.
#pragma once

#include <string>
#include <string_view>

#include "bm25_index.hpp"

namespace mnemo::kb {

std::string encode_bm25_blob(const Bm25Index& index);
// Throws mnemo::Error naming `where` (the storage and blob) and the field that is wrong.
Bm25Index parse_bm25_blob(std::string_view bytes, const std::string& where);

}  // namespace mnemo::kb
