#include "compare/compare_types.hpp"

namespace mnemo::gui {

double CompareColumn::opTotalMs() const {
    double t = 0.0;
    for (const OpTime& o : opTimes) t += o.ms;
    return t;
}

int CompareReport::ran() const {
    int n = 0;
    for (const CompareColumn& c : columns) n += c.ok() ? 1 : 0;
    return n;
}

void registerCompareTypes() {
    qRegisterMetaType<CompareRequest>();
    qRegisterMetaType<CompareReport>();
}

}  // namespace mnemo::gui
