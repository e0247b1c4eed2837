#include "compare/compare_worker.hpp"

#include "engine/chat_tokens.hpp"
#include "mnemo/error.hpp"
#include "mnemo/ops/op_table.hpp"
#include "mnemo/session/compare.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::gui {

namespace {

QString decoded(const Tokenizer& tok, std::vector<int32_t> ids) { return QString::fromStdString(tok.decode(ids, /*skip_special=*/false)); }

CompareColumn columnOf(const BackendRun& r, const CompareResult& res, size_t index, const Tokenizer& tok) {
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
    c.text = QString::fromStdString(tok.decode(r.tokens, /*skip_special=*/true));
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
        if (res.reference >= 0) report.modelType = QString::fromStdString(res.runs[static_cast<size_t>(res.reference)].summary.model_type);
        for (size_t i = 0; i < res.runs.size(); ++i) report.columns.push_back(columnOf(res.runs[i], res, i, *tok));
        Q_EMIT finished(id, report);
    } catch (const Cancelled&) {
        Q_EMIT cancelled(id);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromUtf8(e.what()));
    }
}

}  // namespace mnemo::gui
