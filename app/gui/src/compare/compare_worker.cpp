#include "compare/compare_worker.hpp"

#include <algorithm>

#include "compare/compare_memories.hpp"
#include "engine/chat_tokens.hpp"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/compare.hpp"
#include "mnemo/session/sampling.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::gui {

namespace {

QString decoded(const Tokenizer& tok, std::vector<int32_t> ids) { return QString::fromStdString(tok.decode(ids, /*skip_special=*/false)); }

// The tokens that end a turn: what the chat's token loop stops at (app/common/src/generate.cpp).
std::vector<int32_t> endOfTurnTokens(const Tokenizer& tok) {
    std::vector<int32_t> ids = tok.eos_ids;
    if (tok.eos_id && std::find(ids.begin(), ids.end(), *tok.eos_id) == ids.end()) ids.push_back(*tok.eos_id);
    return ids;
}

// A column's greedy tokens as the chat would show them: decoded as it streams them, without an
// end-of-turn token and cut where a stop string begins.
QString answerText(const Tokenizer& tok, const std::vector<int32_t>& tokens, const std::vector<int32_t>& endOfTurn,
                   const std::vector<std::string>& stopStrings) {
    StreamDecoder decoder(tok, /*skip_special=*/true);
    StopMatcher stops(stopStrings);
    std::string text;
    for (int32_t id : tokens) {
        if (std::find(endOfTurn.begin(), endOfTurn.end(), id) != endOfTurn.end()) return QString::fromStdString(text);
        text += stops.push(decoder.push(id));
        if (stops.stopped()) return QString::fromStdString(text);
    }
    text += stops.push(decoder.finish());
    if (!stops.stopped()) text += stops.flush();
    return QString::fromStdString(text);
}

CompareColumn columnOf(const BackendRun& r, const CompareResult& res, size_t index, const Tokenizer& tok,
                       const std::vector<int32_t>& endOfTurn, const std::vector<std::string>& stopStrings) {
    CompareColumn c;
    c.spec = QStringLiteral("%1:%2").arg(QString::fromStdString(r.backend)).arg(r.device);  // "cpu:0": the device always named
    c.deviceName = QString::fromStdString(r.device_name);
    if (!r.ok()) {
        c.error = QString::fromStdString(r.error);
        return c;
    }
    c.reference = static_cast<int32_t>(index) == res.reference;
    c.promptTokensPerSecond = r.prompt_tps;
    c.tokensPerSecond = r.gen_tps;
    uint64_t total = 0;
    for (const char* cat : op_categories()) {
        const auto it = r.op_times.find(cat);
        const uint64_t ns = it == r.op_times.end() ? 0 : it->second;
        total += ns;
        c.opTimes.push_back({QString::fromLatin1(cat), static_cast<double>(ns) / 1e6});
    }
    c.opTimesKnown = total > 0;
    c.peakBytes = r.peak_device_bytes;
    c.residentBytes = r.host_device_bytes;
    c.maxAbsDlogit = r.max_abs_dlogit;
    c.divergenceStep = r.first_divergence;
    if (r.first_divergence >= 0) {
        const auto step = static_cast<size_t>(r.first_divergence);
        c.divergenceMargin = r.divergence_margin;
        c.divergenceToken = decoded(tok, {r.tokens[step]});
        c.referenceToken = decoded(tok, {res.runs[static_cast<size_t>(res.reference)].tokens[step]});
    }
    c.text = answerText(tok, r.tokens, endOfTurn, stopStrings);
    return c;
}

}  // namespace

CompareWorker::CompareWorker() { registerCompareTypes(); }

void CompareWorker::cancel(quint64 id) { cancellation_.stopThrough(id); }

void CompareWorker::run(quint64 id, CompareRequest request) {
    const RunCancellation::Run run(cancellation_, id);
    if (run.stoppedBeforeStart()) {
        Q_EMIT cancelled(id);
        return;
    }
    try {
        const std::string dir = request.modelDir.toUtf8().toStdString();
        if (dir.empty()) throw Error("no model is loaded: open a model folder to compare backends on");
        if (request.prompt.trimmed().isEmpty()) throw Error("the prompt is empty");
        if (request.backends.size() < request.minBackends)
            throw Error(request.minBackends == 1 ? "no backend to run on" : "choose at least two backends to compare");
        const std::unique_ptr<Tokenizer> tok = load_tokenizer(dir);
        std::string note;
        const ChatTemplate tmpl = detect_chat_template(dir, &note);

        CompareOptions o;
        o.model_dir = dir;
        o.prompt_tokens = renderChatTokens(*tok, tmpl, {{QStringLiteral("user"), request.prompt.trimmed()}});
        o.n_generate = request.steps;
        const std::vector<int32_t> endOfTurn = endOfTurnTokens(*tok);
        if (request.stopAtEndOfTurn) {
            o.end_of_turn_tokens = endOfTurn;
            o.stop_strings = tmpl.stop_strings;
        }
        const auto memoryProblems = std::make_shared<CompareMemoryProblems>();
        o.memories = compareMemorySource(request.memories, dir, memoryProblems);
        for (const QString& b : request.backends) o.backends.push_back(parse_backend_spec(b.toStdString()));
        o.n_threads = request.threads;
        o.cache_dtype = MNEMO_DTYPE_F16;  // as the chat itself runs (model_worker.cpp)
        o.cancel = cancellation_.flag();
        int index = 0;
        const int count = static_cast<int>(o.backends.size());
        o.on_backend_start = [&](const BackendSpec& s) { Q_EMIT backendStarted(id, QString::fromStdString(s.str()), index++, count); };
        const CompareResult res = compare_backends(o);

        CompareReport report;
        report.modelDir = request.modelDir;
        report.promptTokens = static_cast<int>(res.prompt_tokens.size());
        report.steps = res.n_steps;
        report.reference = res.reference;
        report.endedTurn = res.ended_turn;
        report.stopAtEndOfTurn = request.stopAtEndOfTurn;
        report.memories = request.memories.text();
        report.memoriesProblem = memoryProblems->text();
        if (res.reference >= 0) report.modelType = QString::fromStdString(res.runs[static_cast<size_t>(res.reference)].summary.model_type);
        for (size_t i = 0; i < res.runs.size(); ++i) report.columns.push_back(columnOf(res.runs[i], res, i, *tok, endOfTurn, tmpl.stop_strings));
        Q_EMIT finished(id, report);
    } catch (const Cancelled&) {
        Q_EMIT cancelled(id);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromUtf8(e.what()));
    }
}

}  // namespace mnemo::gui
