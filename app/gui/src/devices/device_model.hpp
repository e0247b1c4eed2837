// The device picker's rows: Fastest (measured), then every device of every backend module found, as
// `mnemo devices` lists them (a GPU reached through two backends points back to its first row),
// and a disabled row with the reason for each backend without a device, each module that failed
// to load, and each known backend that is not there at all; last, the "server" entry: a running
// `mnemo serve` answers instead of a local device (ServerController asks for its address).
#pragma once

#include <QAbstractListModel>
#include <QList>

#include "mnemo/modules/registry.hpp"

namespace mnemo::gui {

struct DeviceRow {
    QString label;    // "Vulkan 0: llvmpipe (LLVM 15.0.6, 256 bits)"
    QString detail;   // "cpu device, 2.00 GiB" or the reason it cannot be chosen
    QString backend;  // "" for Fastest and for rows that cannot be chosen
    int device = 0;
    bool enabled = false;
    bool isFastest = false;  // the first row: the fastest device that fits, measured
    bool isServer = false;   // the last row: a `mnemo serve` over HTTP, not a device of this machine
};

class DeviceModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles { LabelRole = Qt::UserRole + 1, DetailRole, BackendRole, DeviceRole, EnabledRole };

    // Lists the devices of `registry` (the global one: the modules next to the program).
    explicit DeviceModel(const BackendRegistry& registry, QObject* parent = nullptr);
    explicit DeviceModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    const DeviceRow& at(int row) const { return rows_.at(row); }
    // The row of an enabled device, or -1.
    Q_INVOKABLE int rowOf(const QString& backend, int device) const;
    Q_INVOKABLE bool isEnabled(int row) const { return row >= 0 && row < rows_.size() && rows_.at(row).enabled; }
    static constexpr int kFastestRow = 0;
    // The Fastest row's detail: what it chose and the figures it measured.
    void setFastestDetail(const QString& detail);
    // The server entry's row (always the last), and its detail: the server in use, or what it is.
    int serverRow() const { return static_cast<int>(rows_.size()) - 1; }
    void setServerDetail(const QString& detail);
    // Every device that can be chosen (not Fastest, not the server), in the picker's order, for
    // the Fastest benchmark.
    QList<DeviceRow> choosable() const;

private:
    QList<DeviceRow> rows_;
};

}  // namespace mnemo::gui
