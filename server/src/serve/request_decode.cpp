#include "serve/request_decode.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/unknown_field_set.h>

#include <climits>
#include <map>
#include <optional>
#include <string>

#include "mnemo/io/printable.hpp"

namespace mnemo::kb {
namespace {

namespace pb = google::protobuf;
using grpc::Status;
using grpc::StatusCode;

Status malformed(const pb::Descriptor& type) {
    return Status(StatusCode::INVALID_ARGUMENT, "the request is not a valid " + type.full_name() +
                                                    " message (malformed protobuf encoding)");
}

// The path of the first field declared `string` whose bytes are not UTF-8, or nothing. Fields the
// schema does not know, and fields sent with another wire type than declared, are skipped:
// protobuf keeps those as unknown fields without looking into them. `ok` turns false when a
// nested message does not parse (the full parse would fail too).
std::optional<std::string> first_bad_string(const pb::Descriptor& type, const pb::UnknownFieldSet& set, const std::string& prefix,
                                            bool& ok) {
    std::map<int, int> seen;  // occurrences per field number: the index of a repeated field
    for (int i = 0; i < set.field_count(); ++i) {
        const pb::UnknownField& f = set.field(i);
        const pb::FieldDescriptor* fd = type.FindFieldByNumber(f.number());
        if (fd == nullptr || f.type() != pb::UnknownField::TYPE_LENGTH_DELIMITED) continue;
        const int index = seen[f.number()]++;
        std::string name = prefix + fd->name();
        if (fd->is_repeated()) name += '[' + std::to_string(index) + ']';
        if (fd->type() == pb::FieldDescriptor::TYPE_STRING) {
            if (!is_valid_utf8(f.length_delimited())) return name;
        } else if (fd->type() == pb::FieldDescriptor::TYPE_MESSAGE) {
            pb::UnknownFieldSet inner;
            if (!inner.ParseFromString(f.length_delimited())) {
                ok = false;
                return std::nullopt;
            }
            if (auto bad = first_bad_string(*fd->message_type(), inner, name + ".", ok)) return bad;
            if (!ok) return std::nullopt;
        }
    }
    return std::nullopt;
}

}  // namespace

Status decode_request(std::string_view bytes, pb::Message& out) {
    const pb::Descriptor& type = *out.GetDescriptor();
    if (bytes.size() > static_cast<size_t>(INT_MAX)) return malformed(type);
    pb::UnknownFieldSet fields;
    if (!fields.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return malformed(type);
    bool ok = true;
    if (const auto bad = first_bad_string(type, fields, "", ok))
        return Status(StatusCode::INVALID_ARGUMENT, printable(*bad) + " is not valid UTF-8 (" + type.full_name() +
                                                        " string fields must be UTF-8 text)");
    if (!ok || !out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return malformed(type);
    return Status::OK;
}

}  // namespace mnemo::kb
