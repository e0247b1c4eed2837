#include "engine/model_worker.hpp"

#include <QElapsedTimer>
#include <QFileInfo>
#include <filesystem>

#include "app/generate.hpp"
#include "app/grounding.hpp"
#include "engine/chat_tokens.hpp"
#include "engine/context_fit.hpp"
#include "plural.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/error.hpp"
#include "mnemo/kb/kb_source.hpp"
#include "mnemo/memory/memory_folder.hpp"
#include "mnemo/memory/retrieval_recorder.hpp"
#include "mnemo/memory/retrieval_settings.hpp"
#include "mnemo/session/sampling.hpp"

namespace mnemo::gui {

namespace {

std::string utf8(const QString& s) { return s.toUtf8().toStdString(); }

// Errors from the engine usually name the folder and the file; add the context only when not.
[[noreturn]] void rethrowWithContext(const std::exception& e, const std::string& dir, const std::string& what) {
    if (std::string(e.what()).find(dir) != std::string::npos) throw Error(e.what());
    throw Error(what + ": " + e.what());
}

// A model is a folder with config.json or one GGUF file (docs/gguf.md).
void checkModelFolder(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (dir.empty()) throw Error("no model folder was given");
    if (!fs::exists(dir, ec)) throw Error("model '" + dir + "' does not exist");
    if (!fs::is_directory(dir, ec)) {
        if (looks_like_gguf(dir)) return;
        throw Error("'" + dir + "' is neither a folder nor a GGUF file (a model is a folder with config.json, or a .gguf file)");
    }
    if (!fs::is_regular_file(fs::path(dir) / "config.json", ec))
        throw Error("model folder '" + dir + "' has no config.json (a Hugging Face model folder has config.json, "
                    "model.safetensors and tokenizer.json or tokenizer.model)");
}

// "plain" when the model has no chat template of its own (the engine then writes a plain
// "User: ... Assistant:" transcript) — the model info line says which.
QString templateName(const ChatTemplate& t) {
    if (t.format == ChatFormat::Plain || t.format == ChatFormat::Raw) return QStringLiteral("plain");
    return QString::fromStdString(t.name);
}

FinishReason finishReason(app::StopReason r) {
    switch (r) {
        case app::StopReason::Eos:
        case app::StopReason::StopString:
        case app::StopReason::QuoteEnded: return FinishReason::EndOfTurn;
        case app::StopReason::Limit: return FinishReason::Limit;
        case app::StopReason::ContextFull: return FinishReason::ContextFull;
        case app::StopReason::Cancelled: return FinishReason::Stopped;
    }
    return FinishReason::EndOfTurn;
}

// The question a grounded answer must not merely repeat: the last user message.
std::string lastUserText(const QList<ChatTurn>& turns) {
    for (auto t = turns.crbegin(); t != turns.crend(); ++t)
        if (t->role == QLatin1String("user")) return utf8(t->text);
    return {};
}

}  // namespace

ModelWorker::ModelWorker() { registerWorkerTypes(); }
ModelWorker::~ModelWorker() = default;

void ModelWorker::requestStop(quint64 id) { cancellation_.stopThrough(id); }

void ModelWorker::load(quint64 id, LoadRequest request) {
    const std::string dir = utf8(request.modelDir);
    const std::string backend = utf8(request.backend);
    try {
        checkModelFolder(dir);
        std::unique_ptr<Tokenizer> tokenizer;
        try {
            tokenizer = load_tokenizer(dir);
        } catch (const std::exception& e) {
            rethrowWithContext(e, dir, "loading the tokenizer of '" + dir + "'");
        }
        std::string note;
        ChatTemplate tmpl = detect_chat_template(dir, &note);

        SessionOptions o;
        o.model_dir = dir;
        o.backend = backend;
        o.device = request.device;
        o.n_threads = request.threads;
        o.n_ctx = request.contextLength;
        o.cache_dtype = MNEMO_DTYPE_F16;  // the programs' default KV cache type (docs/cli.md, --cache-type)
        std::string contextNote;
        std::unique_ptr<Session> session = openClamped(o, request, contextNote);

        std::shared_ptr<MemorySource> source;
        KbStatus kb;
        if (!request.memoryFolder.isEmpty() && !request.kbUrl.isEmpty())
            throw Error("a memory folder and a knowledge server both give memories: choose one");
        if (!request.kbUrl.isEmpty()) {
            source = connectKb(*session, request, kb);
        } else if (!request.memoryFolder.isEmpty()) {
            const std::string folder = utf8(request.memoryFolder);
            if (!session->reads_memories())
                throw Error("memory folder '" + folder + "': model '" + dir + "' (" + session->summary().model_type +
                            ") does not read explicit memories");
            const RetrievalAdvice advice = recommended_retrieval(dir);
            source = std::make_shared<FolderMemorySource>(folder, memory_folder_model(*session),
                                                          retrieval_mode_from_name(utf8(request.retrieval)),
                                                          advice.min_relative_score, advice.min_references);
            kb = {KbState::Folder, request.memoryFolder, QString::fromStdString(source->describe()), 0, 0};
        }
        // What each chunk retrieves is noted on the way through, for the references panel.
        std::shared_ptr<RetrievalRecorder> recorder;
        if (source) {
            recorder = std::make_shared<RetrievalRecorder>(std::move(source));
            session->set_memory_source(recorder);
        }
        session->set_cancel_flag(cancellation_.flag());

        const ModelSummary& s = session->summary();
        ModelInfo info;
        info.modelDir = request.modelDir;
        info.modelType = QString::fromStdString(s.model_type);
        info.architecture = QString::fromStdString(s.architecture);
        info.backend = QString::fromStdString(s.backend.empty() ? backend : s.backend);
        info.device = request.device;
        info.deviceName = QString::fromStdString(s.device_name);
        info.chatTemplate = templateName(tmpl);
        info.memoryFolder = request.memoryFolder;
        info.retrieval = request.retrieval;
        info.kbUrl = request.kbUrl;
        info.kbTokenFile = request.kbTokenFile;
        info.kbCaFile = request.kbCaFile;
        info.kb = kb;
        info.memories = recorder ? QString::fromStdString(recorder->describe()) : QString();
        info.totalParams = s.n_params;
        info.activatedParams = s.activated_params;
        info.bytesPerToken = s.decode_weight_bytes;
        info.memoryBytes = s.weight_bytes + s.state_bytes;
        info.contextLength = session->n_ctx();
        info.trainedContext = s.n_ctx_train;
        info.contextNote = QString::fromStdString(contextNote);

        // Only now does the new model replace the old one.
        session_ = std::move(session);
        tokenizer_ = std::move(tokenizer);
        template_ = std::move(tmpl);
        recorder_ = std::move(recorder);
        info_ = info;
        cache_ = std::make_unique<app::ChatCache>(*session_);
        grounding_.reset();
        Q_EMIT loaded(id, info);
    } catch (const std::exception& e) {
        Q_EMIT loadFailed(id, QString::fromUtf8(e.what()), session_ != nullptr);
    }
}

std::unique_ptr<Session> ModelWorker::openClamped(SessionOptions o, const LoadRequest& request, std::string& note) {
    const std::string& dir = o.model_dir;
    const std::string where = "loading model '" + dir + "' on " + o.backend + ":" + std::to_string(request.device);
    // The engine allows a context past the trained one with a warning on stderr (as llama.cpp
    // does); a window has no stderr, and a model asked to read positions it never saw answers
    // nonsense without a word. So such a context is clamped to the trained length, and the note
    // (the model line and the status) names both numbers.
    o.warn = [](const std::string&) {};  // the only load warning is the one clamped away below
    auto clampNote = [&](int64_t trained) {
        return "the context of " + std::to_string(request.contextLength) + " tokens asked for is longer than the " +
               std::to_string(trained) + " the model was trained on: it uses " + std::to_string(trained);
    };
    std::unique_ptr<Session> session;
    try {
        session = Session::open(o);
    } catch (const std::exception& e) {
        // A context far past the trained one may not even fit the device: learn the trained
        // length from a default load, and clamp to it if that is why.
        if (o.n_ctx <= 0) rethrowWithContext(e, dir, where);
        SessionOptions fallback = o;
        fallback.n_ctx = 0;
        std::unique_ptr<Session> probe;
        try {
            probe = Session::open(fallback);
        } catch (const std::exception&) {
            rethrowWithContext(e, dir, where);
        }
        const int64_t trained = probe->summary().n_ctx_train;
        if (trained <= 0 || o.n_ctx <= trained) rethrowWithContext(e, dir, where);
        note = clampNote(trained);
        if (probe->n_ctx() == trained) return probe;
        probe.reset();
        fallback.n_ctx = static_cast<int32_t>(trained);
        try {
            return Session::open(fallback);
        } catch (const std::exception& e2) {
            rethrowWithContext(e2, dir, where);
        }
    }
    const int64_t trained = session->summary().n_ctx_train;
    if (trained > 0 && session->n_ctx() > trained) {
        note = clampNote(trained);
        session.reset();  // its caches go before the smaller ones are made
        o.n_ctx = static_cast<int32_t>(trained);
        try {
            session = Session::open(o);
        } catch (const std::exception& e) {
            rethrowWithContext(e, dir, where);
        }
    }
    return session;
}

std::shared_ptr<KbSource> ModelWorker::connectKb(Session& session, const LoadRequest& request, KbStatus& status) {
    status.where = request.kbUrl;
    if (!session.reads_memories()) {
        status.state = KbState::Refused;
        status.message = QStringLiteral("model '%1' (%2) does not read explicit memories")
                             .arg(request.modelDir, QString::fromStdString(session.summary().model_type));
        return nullptr;
    }
    try {
        KbSourceOptions o;
        o.url = utf8(request.kbUrl);
        if (!request.kbTokenFile.isEmpty()) o.token = read_kb_token(utf8(request.kbTokenFile));
        o.ca_file = utf8(request.kbCaFile);
        o.retrieval = kb_retrieval_from_name(utf8(request.retrieval));
        // The model's own cut (generation_config.json "mnemo_retrieval"): the GUI has no control for it yet.
        const RetrievalAdvice advice = recommended_retrieval(session.summary().model_dir);
        o.min_relative_score = advice.min_relative_score;
        o.min_references = advice.min_references;
        o.connect_timeout_ms = o.call_timeout_ms = request.kbTimeoutMs;
        // An outage, a recovery or a new bank while generating: called on the session's thread or
        // the prefetch worker, so it only queues a signal.
        o.on_event = [this, url = request.kbUrl](KbEvent event, const std::string& detail) {
            Q_EMIT kbNotice(kbEventNotice(event, url, QString::fromStdString(detail)));
        };
        std::shared_ptr<KbSource> kb = connect_kb(o, memory_folder_model(session));
        status.state = KbState::Connected;
        status.message = QString::fromStdString(kb->describe());
        status.bankVersion = kb->status().bank_version;
        return kb;
    } catch (const std::exception& e) {
        // Not a failed load: the model answers without memories, and the status says why.
        status.message = QString::fromUtf8(e.what());
        status.state = kbStateOfError(status.message);
        return nullptr;
    }
}

KbStatus ModelWorker::kbNow() const {
    KbStatus k = info_.kb;
    const KbSource* kb = recorder_ ? recorder_->kb() : nullptr;
    if (!kb) return k;
    const KbSourceStatus s = kb->status();
    k.bankVersion = s.bank_version;
    k.failedChunks = s.failures + s.skipped;
    switch (s.state) {
        case KbSourceState::Connected:
            k.state = KbState::Connected;
            k.message = QString::fromStdString(kb->describe());
            break;
        case KbSourceState::Unavailable:
            k.message = QString::fromStdString(s.last_error);
            k.state = kbStateOfError(k.message);
            break;
        case KbSourceState::Incompatible:
            k.state = KbState::Refused;
            k.message = QString::fromStdString(s.last_error);
            break;
    }
    return k;
}

void ModelWorker::generate(quint64 id, QList<ChatTurn> turns, SamplingSettings settings) {
    const RunCancellation::Run run(cancellation_, id);
    QElapsedTimer clock;
    clock.start();
    GenerationResult result;
    if (run.stoppedBeforeStart()) {
        result.reason = FinishReason::Stopped;
        Q_EMIT generationFinished(id, result);
        return;
    }
    if (!session_) {
        Q_EMIT generationFailed(id, QStringLiteral("no model is loaded"));
        return;
    }
    try {
        const FittedChat fitted = fitToContext(*tokenizer_, template_, turns, session_->n_ctx(), settings);
        const app::RenderedChat& target = fitted.chat;
        result.droppedMessages = fitted.dropped;
        if (recorder_) recorder_->take(0);  // forget what an earlier, failed request retrieved
        const KbSource* kb = recorder_ ? recorder_->kb() : nullptr;
        const KbSourceStatus before = kb ? kb->status() : KbSourceStatus{};

        SamplingParams p;
        p.temperature = settings.temperature;
        p.top_k = settings.topK;
        p.top_p = settings.topP;
        p.min_p = settings.minP;
        p.repeat_penalty = settings.repeatPenalty;
        p.seed = settings.seed;
        Sampler sampler(p);

        app::GenerateResult r;
        bool first = true;
        try {
            const float* logits = cache_->sync(target);
            result.promptTokens = static_cast<int>(cache_->last_fed());
            app::GenerateRequest req(*session_, *tokenizer_, sampler, cache_->fed(), cancellation_.flag());
            req.first_logits = logits;
            req.stop_strings = template_.stop_strings;
            req.max_tokens = settings.maxTokens;
            if (settings.grounded && recorder_) {  // quotes of what this turn's message read
                if (!grounding_)
                    grounding_ = std::make_unique<app::AnswerGrounding>(*tokenizer_, app::sampled_vocab(*session_, *tokenizer_),
                                                                        template_.stop_strings);
                grounding_->set_references(app::reference_texts(recorder_->peek(0)), lastUserText(turns));
                req.grounding = grounding_.get();
            }
            req.emit = [&](const std::string& piece) {
                if (first) {
                    result.firstTokenSeconds = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
                    first = false;
                }
                Q_EMIT token(id, QString::fromStdString(piece));
            };
            r = app::generate(req);
        } catch (const Cancelled&) {
            r.reason = app::StopReason::Cancelled;
        }
        if (r.reason == app::StopReason::Cancelled) cache_->check_consistent();
        result.text = QString::fromStdString(r.text);
        result.historyText = QString::fromStdString(r.history_text);
        result.reason = finishReason(r.reason);
        result.tokens = r.n_generated;
        result.seconds = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
        if (first) result.firstTokenSeconds = result.seconds;
        result.tokensPerSecond = r.seconds > 0 ? r.n_generated / r.seconds : 0.0;
        result.contextUsed = static_cast<int>(cache_->fed().size());
        result.device = info_.deviceText();
        if (recorder_) {
            const std::vector<RetrievedReference> read = recorder_->take(0);
            result.references = QList<RetrievedReference>(read.begin(), read.end());
        }
        result.kb = kbNow();
        if (info_.kb.missing()) {
            // The server was asked for at load and could not be used: every answer says so.
            result.kbNotice = QStringLiteral("Answered without memories: %1").arg(kbMissingReason(info_.kb));
        } else if (kb) {
            const KbSourceStatus d = kb->status().since(before);
            const uint64_t missed = d.failures + d.skipped;
            if (missed > 0)
                result.kbNotice = QStringLiteral("%1 of %2 got no memories: knowledge server %3 did not answer (%4)")
                                      .arg(missed)
                                      .arg(countText(static_cast<qint64>(d.retrievals), QStringLiteral("chunk")))
                                      .arg(kbServerName(info_.kbUrl), kbProblemOrError(QString::fromStdString(d.last_error)));
        }
        Q_EMIT generationFinished(id, result);
    } catch (const std::exception& e) {
        // The cache may hold half of a prompt: start the next request from scratch.
        cache_->reset();
        Q_EMIT generationFailed(id, QString::fromUtf8(e.what()));
    }
}

}  // namespace mnemo::gui
