#include "compare/compare_memories.hpp"

#include "engine/kb_status.hpp"
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/retrieval_settings.hpp"

namespace mnemo::gui {

namespace {

std::string utf8(const QString& s) { return s.toUtf8().toStdString(); }

}  // namespace

void CompareMemoryProblems::note(const QString& problem) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.isEmpty()) first_ = problem;
}

QString CompareMemoryProblems::text() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
}

std::function<std::shared_ptr<MemorySource>(Session&)> compareMemorySource(const CompareMemories& memories,
                                                                                 const std::string& modelDir,
                                                                                 std::shared_ptr<CompareMemoryProblems> problems) {
    if (memories.none()) return {};
    return [m = memories, modelDir, problems](Session& session) -> std::shared_ptr<MemorySource> {
        if (!session.reads_memories())
            throw Error("model '" + modelDir + "' (" + session.summary().model_type + ") does not read explicit memories");
        // The model's own cut (generation_config.json "mnemo_retrieval"), as the chat uses it.
        const RetrievalAdvice cut = recommended_retrieval(modelDir);
        if (m.kbUrl.isEmpty())
            return std::make_shared<FolderMemorySource>(utf8(m.folder), memory_folder_model(session),
                                                        retrieval_mode_from_name(utf8(m.retrieval)), cut.min_relative_score,
                                                        cut.min_references);
        KbSourceOptions o;
        o.url = utf8(m.kbUrl);
        o.ca_file = utf8(m.kbCaFile);
        o.retrieval = kb_retrieval_from_name(utf8(m.retrieval));
        o.min_relative_score = cut.min_relative_score;
        o.min_references = cut.min_references;
        o.connect_timeout_ms = o.call_timeout_ms = m.kbTimeoutMs;
        // An outage in the middle of a backend's run leaves some of its chunks without memories:
        // its figures and text are then not comparable, and the report says so.
        o.on_event = [problems, url = m.kbUrl](KbEvent event, const std::string& detail) {
            if (event == KbEvent::Outage || event == KbEvent::Incompatible)
                problems->note(kbEventNotice(event, url, QString::fromStdString(detail)).text);
        };
        // After a failure every later backend runs without memories too: the columns stay comparable.
        if (!problems->text().isEmpty()) return nullptr;
        try {
            if (!m.kbTokenFile.isEmpty()) o.token = read_kb_token(utf8(m.kbTokenFile));
            return connect_kb(o, memory_folder_model(session));
        } catch (const std::exception& e) {
            const QString error = QString::fromUtf8(e.what());
            problems->note(kbMissingReason({kbStateOfError(error), m.kbUrl, error, 0, 0}));
            return nullptr;
        }
    };
}

}  // namespace mnemo::gui
