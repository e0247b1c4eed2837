// The server's counters (InfoReply.counters): lock-free atomics, bumped by every call and read
// by Info, so observing them costs the read path nothing. Names in docs/kb-protocol.md.
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

namespace mnemo::kb {

enum class KbMethod { Info, Health, Retrieve, FetchMemories, RetrieveMemories, GetCodebook, Reload, AddDocuments, DeleteDocuments };
constexpr size_t kKbMethods = 9;
const char* method_name(KbMethod m);

class ServeCounters {
public:
    void request(KbMethod m) { requests_[static_cast<size_t>(m)].fetch_add(1, std::memory_order_relaxed); }
    void finished(grpc::StatusCode code);
    void records(uint64_t n) { records_served_.fetch_add(n, std::memory_order_relaxed); }
    void bytes(uint64_t n) { bytes_sent_.fetch_add(n, std::memory_order_relaxed); }
    void reload(bool ok) { (ok ? reloads_ : reload_failures_).fetch_add(1, std::memory_order_relaxed); }
    void enter() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
    void leave() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

    uint64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
    // "requests.Retrieve", "errors.NOT_FOUND", "records_served", "bytes_sent", "reloads",
    // "reload_failures", "in_flight"; requests and errors only once non-zero.
    std::map<std::string, uint64_t> snapshot() const;

private:
    std::array<std::atomic<uint64_t>, kKbMethods> requests_{};
    std::array<std::atomic<uint64_t>, 17> errors_{};  // by grpc::StatusCode (0..16)
    std::atomic<uint64_t> records_served_{0}, bytes_sent_{0}, reloads_{0}, reload_failures_{0}, in_flight_{0};
};

}  // namespace mnemo::kb
