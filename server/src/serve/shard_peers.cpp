#include "serve/shard_peers.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>

#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"
#include "serve/listen_policy.hpp"

namespace mnemo::kb {
namespace {

using Clock = std::chrono::system_clock;

// How often a node waiting for its peers looks at whether its own call was cancelled.
constexpr std::chrono::milliseconds kStopPoll{20};
// A channel to a peer that went down retries its connection at most this far apart, so a peer
// that comes back is asked again within about a second (gRPC's default backs off to 2 minutes).
// (gRPC's minimum reconnect backoff is left alone: it is also the connect timeout, 20 s.)
constexpr int kMaxReconnectBackoffMs = 1000;
constexpr int kInitialReconnectBackoffMs = 100;

struct PeerTarget {
    bool tls = true;
    std::string target;  // what gRPC dials: HOST:PORT or [V6]:PORT
};

PeerTarget parse_peer_url(const std::string& url) {
    const std::string where = "--shard-peer '" + printable(url, 200) + "'";
    PeerTarget t;
    if (url.rfind("grpcs://", 0) == 0) {
        t.target = url.substr(8);
    } else if (url.rfind("grpc://", 0) == 0) {
        t.tls = false;
        t.target = url.substr(7);
    } else {
        throw Error(where + ": expected grpcs://HOST:PORT (TLS) or grpc://HOST:PORT (plaintext, loopback only)");
    }
    while (!t.target.empty() && t.target.back() == '/') t.target.pop_back();
    if (!listen_address_problem(t.target).empty() || t.target.size() < 2 || t.target.substr(t.target.size() - 2) == ":0")
        throw Error(where + ": expected HOST:PORT or [V6]:PORT after the scheme, with a port in 1..65535");
    // The node's token would travel in the clear: only to this machine.
    if (!t.tls && !is_loopback_listen_address(t.target))
        throw Error(where + ": plaintext (grpc://) is allowed to a loopback address only; use grpcs:// with --shard-peer-ca");
    return t;
}

}  // namespace

struct ShardPeers::Peer {
    std::string url;
    ShardSpec expected;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::KnowledgeBase::Stub> stub;
};

ShardPeers::ShardPeers(ShardSpec self, ShardPeerOptions options) : self_(self), options_(std::move(options)) {
    if (!self_.sharded()) throw Error("--shard-peer: this node is not sharded (give --shard I/N with N >= 2)");
    if (options_.urls.size() != self_.shards - 1)
        throw Error("--shard " + self_.describe() + " needs " + std::to_string(self_.shards - 1) + " --shard-peer (one per other shard, in shard "
                    "order), got " + std::to_string(options_.urls.size()));
    if (options_.timeout.count() <= 0) throw Error("--shard-peer-timeout-ms must be at least 1");
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kInitialReconnectBackoffMs);
    for (size_t i = 0; i < options_.urls.size(); ++i) {
        const PeerTarget t = parse_peer_url(options_.urls[i]);
        auto p = std::make_unique<Peer>();
        p->url = options_.urls[i];
        // Shards in order, this node's own skipped.
        p->expected = {static_cast<uint32_t>(i) < self_.shard ? static_cast<uint32_t>(i) : static_cast<uint32_t>(i) + 1, self_.shards};
        std::shared_ptr<grpc::ChannelCredentials> creds;
        if (t.tls) {
            grpc::SslCredentialsOptions ssl;
            ssl.pem_root_certs = options_.ca_pem;
            creds = grpc::SslCredentials(ssl);
        } else {
            creds = grpc::InsecureChannelCredentials();
        }
        p->channel = grpc::CreateCustomChannel(t.target, creds, args);
        p->channel->GetState(true);  // connect now, not on the first client's call
        p->stub = v1::KnowledgeBase::NewStub(p->channel);
        peers_.push_back(std::move(p));
    }
}

ShardPeers::~ShardPeers() = default;

ShardSpec ShardPeers::expected(size_t i) const { return peers_.at(i)->expected; }
const std::string& ShardPeers::url(size_t i) const { return peers_.at(i)->url; }

std::vector<ShardPeers::Answer> ShardPeers::ask_all(const v1::RetrieveRequest& request, Clock::time_point deadline,
                                                    const std::function<bool()>& should_stop, const std::function<void()>& local) {
    const size_t n = peers_.size();
    std::vector<Answer> answers(n);
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts(n);
    std::mutex mutex;
    std::condition_variable done;
    size_t pending = n;
    const auto started = std::chrono::steady_clock::now();
    const Clock::time_point peer_deadline = std::min(deadline, Clock::now() + options_.timeout);
    for (size_t i = 0; i < n; ++i) {
        contexts[i] = std::make_unique<grpc::ClientContext>();
        contexts[i]->set_deadline(peer_deadline);
        if (!options_.token.empty()) contexts[i]->AddMetadata("authorization", "Bearer " + options_.token);
        peers_[i]->stub->async()->Retrieve(contexts[i].get(), &request, &answers[i].reply, [&, i](grpc::Status status) {
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
            std::lock_guard<std::mutex> lock(mutex);
            answers[i].status = std::move(status);
            answers[i].ms = ms;
            if (--pending == 0) done.notify_all();
        });
    }
    std::exception_ptr local_error;
    try {
        local();
    } catch (...) {
        local_error = std::current_exception();
    }
    // Every callback runs exactly once (gRPC ends each call by its deadline at the latest), and
    // the contexts, replies and this frame must outlive them all: wait for every one.
    bool cancelled = false;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex);
            if (done.wait_for(lock, kStopPoll, [&] { return pending == 0; })) break;
        }
        // Outside the lock: a cancelled call's callback takes it.
        if (!cancelled && (local_error || (should_stop && should_stop()))) {
            // The answer is lost either way: free the peers at once.
            cancelled = true;
            for (auto& c : contexts) c->TryCancel();
        }
    }
    if (local_error) std::rethrow_exception(local_error);
    return answers;
}

}  // namespace mnemo::kb
