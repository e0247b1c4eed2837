#include "serve/serve_counters.hpp"

#include "serve/request_checks.hpp"

namespace mnemo::kb {

const char* method_name(KbMethod m) {
    switch (m) {
        case KbMethod::Info: return "Info";
        case KbMethod::Health: return "Health";
        case KbMethod::Retrieve: return "Retrieve";
        case KbMethod::FetchMemories: return "FetchMemories";
        case KbMethod::RetrieveMemories: return "RetrieveMemories";
        case KbMethod::GetCodebook: return "GetCodebook";
        case KbMethod::Reload: return "Reload";
        case KbMethod::AddDocuments: return "AddDocuments";
        case KbMethod::DeleteDocuments: return "DeleteDocuments";
    }
    return "?";
}

void ServeCounters::finished(grpc::StatusCode code) {
    const auto i = static_cast<size_t>(code);
    if (code != grpc::StatusCode::OK && i < errors_.size()) errors_[i].fetch_add(1, std::memory_order_relaxed);
}

std::map<std::string, uint64_t> ServeCounters::snapshot() const {
    std::map<std::string, uint64_t> out;
    for (size_t i = 0; i < kKbMethods; ++i)
        if (const uint64_t n = requests_[i].load(std::memory_order_relaxed))
            out[std::string("requests.") + method_name(static_cast<KbMethod>(i))] = n;
    for (size_t i = 0; i < errors_.size(); ++i)
        if (const uint64_t n = errors_[i].load(std::memory_order_relaxed))
            out[std::string("errors.") + status_code_name(static_cast<grpc::StatusCode>(i))] = n;
    out["records_served"] = records_served_.load(std::memory_order_relaxed);
    out["bytes_sent"] = bytes_sent_.load(std::memory_order_relaxed);
    out["reloads"] = reloads_.load(std::memory_order_relaxed);
    out["reload_failures"] = reload_failures_.load(std::memory_order_relaxed);
    out["in_flight"] = in_flight_.load(std::memory_order_relaxed);
    return out;
}

}  // namespace mnemo::kb
