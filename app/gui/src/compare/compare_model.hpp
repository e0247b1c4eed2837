// The compare view's columns, one per backend, for QML: the figures of a CompareReport already
// written as text (how a figure reads is decided here, where a test can check it), and the time
// per op category as numbers for the bar chart.
#pragma once

#include <QAbstractListModel>

#include "compare/compare_types.hpp"

namespace mnemo::gui {

class CompareModel : public QAbstractListModel {
    Q_OBJECT
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Roles {
        SpecRole = Qt::UserRole + 1,
        DeviceNameRole,
        OkRole,
        ErrorRole,
        ReferenceRole,
        TokensPerSecondRole,
        PromptTokensPerSecondRole,
        OpTimesKnownRole,
        OpTimesRole,  // [{category, ms, text}] in op_categories() order
        PeakMemoryRole,
        MaxAbsDlogitRole,
        DivergenceRole,
        TextRole,
        StepsRole,  // where the steps ended, and over which steps this column was compared
    };

    using QAbstractListModel::QAbstractListModel;
    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    void setReport(const CompareReport& report);
    const CompareReport& report() const { return report_; }
    // The longest op category time of any column: the bar chart's full width.
    double maxOpMs() const;

    // The texts the view shows (also used by the tests).
    static QString tokensPerSecondText(const CompareColumn& c, int steps);
    static QString peakMemoryText(const CompareColumn& c);
    static QString maxAbsDlogitText(const CompareColumn& c);
    static QString divergenceText(const CompareColumn& c);
    static QString stepsText(const CompareColumn& c, const CompareReport& r);

Q_SIGNALS:
    void countChanged();

private:
    CompareReport report_;
};

}  // namespace mnemo::gui
