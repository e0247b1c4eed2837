// A raw HTTP/1.1 client for the server tests: the exact bytes of a reply (status line, headers,
// the body with its chunked transfer coding removed), and a connection that can be dropped
// mid-answer, which a library client hides.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

namespace mnemo::serve::test {

struct HttpReply {
    int status = 0;
    std::map<std::string, std::string> headers;  // names lower-cased
    std::string body;                             // de-chunked
    std::string raw_body;                         // as sent (chunked framing included)
};

class RawConnection {
public:
    explicit RawConnection(int port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
        timeval tv{60, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    ~RawConnection() { close(); }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    void send(const std::string& s) {
        size_t off = 0;
        while (off < s.size()) {
            const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
            if (n <= 0) throw std::runtime_error("send failed");
            off += static_cast<size_t>(n);
        }
    }
    // Reads until `needle` has arrived (or the peer closes); returns everything read so far.
    std::string read_until(const std::string& needle) {
        char buf[4096];
        while (got_.find(needle) == std::string::npos) {
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) break;
            got_.append(buf, static_cast<size_t>(n));
        }
        return got_;
    }
    std::string read_all() { return read_until(std::string(1, '\0') + "never"); }

private:
    int fd_ = -1;
    std::string got_;
};

inline std::string request_text(const std::string& method, const std::string& path, const std::string& body,
                                const std::string& extra_headers = "") {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers;
    if (!body.empty() || method == "POST")
        r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

inline HttpReply parse_reply(const std::string& raw) {
    HttpReply r;
    const size_t head_end = raw.find("\r\n\r\n");
    if (head_end == std::string::npos) throw std::runtime_error("no complete reply header in: " + raw.substr(0, 200));
    const std::string head = raw.substr(0, head_end);
    r.status = std::stoi(head.substr(9, 3));
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
        const size_t next = head.find("\r\n", pos + 2);
        const std::string line = head.substr(pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
        const size_t colon = line.find(':');
        if (colon != std::string::npos) {
            std::string name = line.substr(0, colon);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            r.headers[name] = line.substr(colon + 2);
        }
        pos = next;
    }
    r.raw_body = raw.substr(head_end + 4);
    if (r.headers["transfer-encoding"] == "chunked") {
        size_t p = 0;
        while (p < r.raw_body.size()) {
            const size_t eol = r.raw_body.find("\r\n", p);
            if (eol == std::string::npos) break;
            const size_t n = std::stoul(r.raw_body.substr(p, eol - p), nullptr, 16);
            if (n == 0) break;
            r.body += r.raw_body.substr(eol + 2, n);
            p = eol + 2 + n + 2;
        }
    } else {
        r.body = r.raw_body;
    }
    return r;
}

inline HttpReply http(int port, const std::string& method, const std::string& path, const std::string& body = "",
                      const std::string& extra_headers = "") {
    RawConnection c(port);
    c.send(request_text(method, path, body, extra_headers));
    return parse_reply(c.read_all());
}

}  // namespace mnemo::serve::test
