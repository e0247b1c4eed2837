// The per-op times of a run as JSON, `[{"op", "calls", "total_ns"}, ...]`: `mnemo bench --profile`
// and `mnemo compare --json` write them the same way, so scripts read both with one parser.
#pragma once

#include <vector>

#include "app/json_writer.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::cli {

inline app::JsonWriter& op_profiles_json(app::JsonWriter& j, const std::vector<OpProfile>& ops) {
    j.begin_array();
    for (const OpProfile& op : ops)
        j.begin_object().key("op").value(op.op).key("calls").value(op.calls).key("total_ns").value(op.total_ns).end_object();
    return j.end_array();
}

}  // namespace mnemo::cli
