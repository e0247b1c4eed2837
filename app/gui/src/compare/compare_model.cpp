#include "compare/compare_model.hpp"

#include <QVariantMap>
#include <algorithm>

#include "app/measure.hpp"

namespace mnemo::gui {

namespace {

QString bytes(quint64 n) { return QString::fromStdString(app::format_bytes(n)); }

// A token as it reads in a sentence: quoted, with its spaces and line breaks visible.
QString quotedToken(QString t) {
    t.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return QLatin1Char('"') + t + QLatin1Char('"');
}

}  // namespace

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(report_.columns.size()); }

QString CompareModel::tokensPerSecondText(const CompareColumn& c, int steps) {
    if (!c.ok()) return QStringLiteral("-");
    // The first token comes from the prompt's logits: generation speed needs a second step.
    if (steps < 2) return QStringLiteral("n/a (one step)");
    return QStringLiteral("%1 tokens/s").arg(c.tokensPerSecond, 0, 'f', 1);
}

QString CompareModel::peakMemoryText(const CompareColumn& c) {
    if (!c.ok()) return QStringLiteral("-");
    QString s = bytes(c.peakBytes);
    // Host memory used in place (mmapped weights) is resident in the process, not a device copy.
    if (c.residentBytes > 0) s += QStringLiteral(" (%1 resident)").arg(bytes(c.residentBytes));
    return s;
}

QString CompareModel::maxAbsDlogitText(const CompareColumn& c) {
    if (!c.ok()) return QStringLiteral("-");
    if (c.reference) return QStringLiteral("reference");
    return QString::number(c.maxAbsDlogit, 'g', 3);
}

QString CompareModel::divergenceText(const CompareColumn& c) {
    if (!c.ok()) return QStringLiteral("-");
    if (c.reference) return QStringLiteral("reference");
    if (c.divergenceStep < 0) return QStringLiteral("none: the same tokens at every step");
    return QStringLiteral("step %1: %2 instead of %3 (margin %4)")
        .arg(c.divergenceStep)
        .arg(quotedToken(c.divergenceToken), quotedToken(c.referenceToken))
        .arg(c.divergenceMargin, 0, 'g', 3);
}

QString CompareModel::stepsText(const CompareColumn& c, const CompareReport& r) {
    if (!c.ok()) return QStringLiteral("-");
    // Every column runs the reference backend's steps: that is what makes them comparable.
    if (!c.reference)
        return QStringLiteral("compared over the reference backend's %1 steps%2")
            .arg(r.steps)
            .arg(r.endedTurn ? QStringLiteral(", to the end of its turn") : QString());
    if (r.endedTurn) return QStringLiteral("ended its turn at step %1; every column stops there").arg(r.steps);
    if (r.stopAtEndOfTurn) return QStringLiteral("stopped at the limit of %1 steps, before the end of its turn").arg(r.steps);
    return QStringLiteral("%1 steps").arg(r.steps);
}

double CompareModel::maxOpMs() const {
    double m = 0.0;
    for (const CompareColumn& c : report_.columns)
        for (const OpTime& o : c.opTimes) m = std::max(m, o.ms);
    return m;
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= report_.columns.size()) return {};
    const CompareColumn& c = report_.columns.at(index.row());
    switch (role) {
        case Qt::DisplayRole:
        case SpecRole: return c.spec;
        case DeviceNameRole: return c.deviceName;
        case OkRole: return c.ok();
        case ErrorRole: return c.error;
        case ReferenceRole: return c.reference;
        case TokensPerSecondRole: return tokensPerSecondText(c, report_.steps);
        case PromptTokensPerSecondRole: return c.ok() ? QStringLiteral("%1 tokens/s").arg(c.promptTokensPerSecond, 0, 'f', 1) : QStringLiteral("-");
        case OpTimesKnownRole: return c.opTimesKnown;
        case OpTimesRole: {
            QVariantList list;
            for (const OpTime& o : c.opTimes)
                list.push_back(QVariantMap{{QStringLiteral("category"), o.category},
                                           {QStringLiteral("ms"), o.ms},
                                           {QStringLiteral("text"), QStringLiteral("%1 ms").arg(o.ms, 0, 'f', 2)}});
            return list;
        }
        case PeakMemoryRole: return peakMemoryText(c);
        case MaxAbsDlogitRole: return maxAbsDlogitText(c);
        case DivergenceRole: return divergenceText(c);
        case TextRole: return c.text;
        case StepsRole: return stepsText(c, report_);
        default: return {};
    }
}

QHash<int, QByteArray> CompareModel::roleNames() const {
    return {{SpecRole, "spec"},
            {DeviceNameRole, "deviceName"},
            {OkRole, "ok"},
            {ErrorRole, "error"},
            {ReferenceRole, "reference"},
            {TokensPerSecondRole, "tokensPerSecond"},
            {PromptTokensPerSecondRole, "promptTokensPerSecond"},
            {OpTimesKnownRole, "opTimesKnown"},
            {OpTimesRole, "opTimes"},
            {PeakMemoryRole, "peakMemory"},
            {MaxAbsDlogitRole, "maxAbsDlogit"},
            {DivergenceRole, "divergence"},
            {TextRole, "answer"},
            {StepsRole, "stepsText"}};
}

void CompareModel::setReport(const CompareReport& report) {
    const bool countChanges = report.columns.size() != report_.columns.size();
    beginResetModel();
    report_ = report;
    endResetModel();
    if (countChanges) Q_EMIT countChanged();
}

}  // namespace mnemo::gui
