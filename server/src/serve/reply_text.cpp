#include "serve/reply_text.hpp"

#include "mnemo/io/printable.hpp"

namespace mnemo::kb {

std::string utf8_for_reply(std::string_view text) {
    if (is_valid_utf8(text)) return std::string(text);
    std::string out;
    out.reserve(text.size() + 16);
    size_t i = 0;
    while (i < text.size()) {
        // The shortest prefix that is one well-formed character: is_valid_utf8 decides, so "valid"
        // means here what it means for every request field the server checks.
        size_t n = 1;
        while (n <= 4 && i + n <= text.size() && !is_valid_utf8(text.substr(i, n))) ++n;
        if (n <= 4 && i + n <= text.size()) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
        }
    }
    return out;
}

}  // namespace mnemo::kb
