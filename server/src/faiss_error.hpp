// FAISS reports every failure as a FaissException whose text is "Error in <signature> at
// <file>:<line>: <message>", where <message> may itself be "Error: '<condition>' failed: <why>".
// Users get <why>: the signature and the source position are FAISS's business.
#pragma once

#include <faiss/impl/FaissException.h>

#include <string>

namespace mnemo::kb {

inline std::string faiss_reason(const faiss::FaissException& e) {
    std::string m = e.what();
    if (m.rfind("Error in ", 0) == 0) {
        const size_t at = m.find(" at ");
        const size_t colon = at == std::string::npos ? std::string::npos : m.find(": ", at);
        if (colon != std::string::npos) m = m.substr(colon + 2);
    }
    if (m.rfind("Error: '", 0) == 0) {
        const size_t failed = m.find("' failed: ");
        if (failed != std::string::npos) m = m.substr(failed + 10);
    }
    return m;
}

}  // namespace mnemo::kb
