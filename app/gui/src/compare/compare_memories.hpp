// The explicit memories of a comparison, made for each backend's session as the chat makes them
// for its own (ModelWorker::load): a memory folder (mnemo memorize) with the chosen retrieval, or a
// knowledge server with its token and CA file. A server that does not answer does not stop the
// comparison: every backend then runs without memories, the same for all, and the report says why.
#pragma once

#include <QString>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "compare/compare_types.hpp"
#include "mnemo/memory/explicit_memory.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo::gui {

// What went wrong with the memories during a run, from any thread (the knowledge-server client
// reports an outage from its prefetch worker).
class CompareMemoryProblems {
public:
    void note(const QString& problem);
    QString text() const;  // the first problem noted ("" when none)

private:
    mutable std::mutex mu_;
    QString first_;
};

// CompareOptions::memories for `memories` on the model in `modelDir`; empty when there are none.
// A folder that does not fit the model, or a model that reads no memories, throws (that backend's
// error); a knowledge server that cannot be reached is noted in `problems` and gives no source.
std::function<std::shared_ptr<MemorySource>(Session&)> compareMemorySource(const CompareMemories& memories,
                                                                                 const std::string& modelDir,
                                                                                 std::shared_ptr<CompareMemoryProblems> problems);

}  // namespace mnemo::gui
