// Text the server puts into a reply's `string` fields (reference texts, titles, sources, the
// model's facts). proto3 requires UTF-8 there: protobuf complains on the server's stderr when it
// serializes anything else, and the client's parser rejects the whole reply, so one badly cut
// reference (a multi-byte character split at a token boundary) would make every retrieval that
// finds it fail on the device. Such bytes are replaced with U+FFFD instead.
#pragma once

#include <string>
#include <string_view>

namespace mnemo::kb {

// `text` unchanged when it is valid UTF-8 (the usual case, checked first); otherwise each byte
// that does not start a valid sequence becomes U+FFFD.
std::string utf8_for_reply(std::string_view text);

}  // namespace mnemo::kb
