// The values of the compare view that cross between the GUI thread and the CompareWorker's
// thread (queued signals): what to compare, and what each backend did, already in the GUI's terms
// (the engine's BackendRun with token ids decoded to text).
#pragma once

#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>

namespace mnemo::gui {

// The explicit memories a comparison reads: the chat's (a memory folder or a knowledge server, as
// the loaded model has them), so that the compare view answers as the chat does. None when both
// are empty.
struct CompareMemories {
    QString folder;
    QString kbUrl;
    QString kbTokenFile;
    QString kbCaFile;
    int kbTimeoutMs = 2000;
    QString retrieval = QStringLiteral("bm25");  // "bm25" or "vector" (a server also "hybrid")

    bool none() const { return folder.isEmpty() && kbUrl.isEmpty(); }
    QString text() const;  // "memory folder /x", "knowledge server 127.0.0.1:7070", "no memories"
};

struct CompareRequest {
    QString modelDir;
    QString prompt;        // one user turn, rendered with the model's chat template as the chat sends it
    QStringList backends;  // "cpu", "vulkan", "vulkan:1" (mnemo::parse_backend_spec)
    int steps = 16;        // greedy tokens per backend at most, one compared logit row each
    // End at the reference backend's end of turn (its end-of-sequence token or the template's
    // stop string), as the chat does; every backend is compared over those steps. False: exactly
    // `steps` (the Fastest device benchmark times a fixed number).
    bool stopAtEndOfTurn = false;
    CompareMemories memories;
    int threads = 0;       // 0: each backend's choice
    int minBackends = 2;   // a comparison needs two; the Fastest device benchmark also runs on one
};

struct OpTime {
    QString category;  // one of mnemo::op_categories()
    double ms = 0.0;
};

// One backend's column. When it could not run, `error` says why and the figures are zero.
struct CompareColumn {
    QString spec;        // "vulkan:0"
    QString deviceName;
    QString error;
    bool reference = false;  // the first backend that ran: the others are measured against it
    double promptTokensPerSecond = 0.0;
    double tokensPerSecond = 0.0;  // over the decode steps after the first token; 0 when there are none
    bool opTimesKnown = false;     // false: the backend gives no per-op timings
    QList<OpTime> opTimes;         // every category, in op_categories() order
    quint64 peakBytes = 0;         // the most bytes allocated through the device at once
    quint64 residentBytes = 0;     // of which host memory used in place (mmapped weights)
    double maxAbsDlogit = 0.0;     // over all steps, against the reference backend (0 for itself)
    int divergenceStep = -1;       // the first step whose greedy token differs from the reference backend's; -1: none
    double divergenceMargin = 0.0; // the reference backend's logit of its token minus its logit of this one's
    QString divergenceToken;       // this backend's token at that step, decoded
    QString referenceToken;        // the reference backend's token at that step, decoded
    QString text;                  // this backend's greedy tokens, decoded

    bool ok() const { return error.isEmpty(); }
    double opTotalMs() const;
};

struct CompareReport {
    QString modelDir;
    QString modelType;
    int promptTokens = 0;
    int steps = 0;
    int reference = -1;  // index in columns; -1 when no backend ran
    // The reference backend ended its turn at the last step (CompareRequest::stopAtEndOfTurn);
    // false: the steps ran to the limit.
    bool endedTurn = false;
    bool stopAtEndOfTurn = false;  // as requested
    // Where the memories came from ("memory folder /x", "no memories"), and why they are missing
    // when the server asked for did not give them (empty otherwise).
    QString memories;
    QString memoriesProblem;
    QList<CompareColumn> columns;

    int ran() const;
};

void registerCompareTypes();

}  // namespace mnemo::gui

Q_DECLARE_METATYPE(mnemo::gui::CompareRequest)
Q_DECLARE_METATYPE(mnemo::gui::CompareReport)
