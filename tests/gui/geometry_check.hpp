// The geometry check of the window tests (gui.layout, gui.documents_window): nothing shown outside
// the item that holds it, nothing overlapping in a row or a column.
#pragma once

#include <QQuickItem>
#include <QRectF>
#include <QStringList>

#include "window_test_util.hpp"

namespace mnemo::gui::test {

inline QString describe(const QQuickItem* i) {
    QString s = QString::fromLatin1(i->metaObject()->className());
    if (!i->objectName().isEmpty()) s += QLatin1Char('"') + i->objectName() + QLatin1Char('"');
    const QString text = i->property("text").toString();
    if (!text.isEmpty()) s += QStringLiteral(" text=") + text.left(40);
    return s;
}

// A Flickable's content scrolls under it by design; only what the view shows is checked (the view
// clips), so the content item is not a container whose bounds its children must keep.
inline bool scrolls(const QQuickItem* parent) {
    const QQuickItem* grand = parent->parentItem();
    return parent->inherits("QQuickFlickable") || (grand && grand->inherits("QQuickFlickable"));
}

inline bool shown(const QQuickItem* i) { return i->isVisible() && i->width() > 0.5 && i->height() > 0.5 && i->opacity() > 0; }

// Every visible child of a clipping item, a layout or `root` itself (a window's content, a popup)
// within its bounds; siblings of a row or a column layout apart. Returns what is wrong, one line each.
inline QStringList geometryProblems(QQuickItem* root) {
    QStringList problems;
    QList<QQuickItem*> items;
    collectItems(root, items);
    for (QQuickItem* parent : items) {
        if (!shown(parent) || scrolls(parent)) continue;
        const bool isLayout = parent->inherits("QQuickLayout");
        if (!parent->clip() && !isLayout && parent != root) continue;
        const QRectF bounds(0, 0, parent->width(), parent->height());
        QList<QQuickItem*> kids;
        for (QQuickItem* c : parent->childItems())
            if (shown(c)) kids << c;
        for (QQuickItem* c : kids) {
            const QRectF r = c->mapRectToItem(parent, QRectF(0, 0, c->width(), c->height()));
            if (!bounds.adjusted(-0.5, -0.5, 0.5, 0.5).contains(r))
                problems << QStringLiteral("%1 at (%2,%3 %4×%5) outside %6 (%7×%8)")
                                .arg(describe(c)).arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())
                                .arg(describe(parent)).arg(bounds.width()).arg(bounds.height());
        }
        const bool row = parent->inherits("QQuickRowLayout");
        const bool column = parent->inherits("QQuickColumnLayout");
        if (!row && !column) continue;
        for (int a = 0; a < kids.size(); ++a)
            for (int b = a + 1; b < kids.size(); ++b) {
                const QRectF ra = kids[a]->mapRectToItem(parent, QRectF(0, 0, kids[a]->width(), kids[a]->height()));
                const QRectF rb = kids[b]->mapRectToItem(parent, QRectF(0, 0, kids[b]->width(), kids[b]->height()));
                const bool overlap = row ? (ra.left() < rb.right() - 0.5 && rb.left() < ra.right() - 0.5)
                                         : (ra.top() < rb.bottom() - 0.5 && rb.top() < ra.bottom() - 0.5);
                if (overlap)
                    problems << QStringLiteral("%1 overlaps %2 in %3").arg(describe(kids[a]), describe(kids[b]), describe(parent));
            }
    }
    return problems;
}

}  // namespace mnemo::gui::test
