#include "devices/device_model.hpp"

#include <cstring>

#include "app/measure.hpp"

namespace mnemo::gui {

namespace {

const QLatin1String kFastestDetail("the fastest device that fits, measured by a short benchmark of the loaded model on each device "
                                   "(cached per model and device list)");

const QLatin1String kServerDetail("a running mnemo serve (or another OpenAI-compatible API) answers instead of a device of this "
                                  "machine: asks for its address and API key");

template <size_t N>
QString cField(const char (&a)[N]) {
    size_t n = 0;
    while (n < N && a[n] != '\0') ++n;
    return QString::fromUtf8(a, static_cast<qsizetype>(n));
}

QString backendTitle(const std::string& name) {
    if (name == "cpu") return QStringLiteral("CPU");
    if (name == "vulkan") return QStringLiteral("Vulkan");
    if (name == "cuda") return QStringLiteral("CUDA");
    return QString::fromStdString(name);
}

QString typeName(int32_t t) {
    switch (t) {
        case MNEMO_DEVICE_CPU: return QStringLiteral("cpu device");
        case MNEMO_DEVICE_GPU: return QStringLiteral("gpu");
        case MNEMO_DEVICE_IGPU: return QStringLiteral("integrated gpu");
        default: return QStringLiteral("device");
    }
}

}  // namespace

DeviceModel::DeviceModel(QObject* parent) : DeviceModel(BackendRegistry::global(), parent) {}

DeviceModel::DeviceModel(const BackendRegistry& registry, QObject* parent) : QAbstractListModel(parent) {
    rows_.push_back({QStringLiteral("Fastest (measured)"), kFastestDetail, QString(), 0, true, true});
    const std::vector<DeviceEntry> devices = registry.devices();
    std::vector<const DeviceEntry*> shown;
    for (const BackendModule& m : registry.modules()) {
        bool any = false;
        for (const DeviceEntry& d : devices) {
            if (d.backend != m.name) continue;
            any = true;
            DeviceRow row;
            row.backend = QString::fromStdString(d.backend);
            row.device = d.index;
            row.enabled = true;
            row.label = QStringLiteral("%1 %2: %3").arg(backendTitle(d.backend)).arg(d.index).arg(cField(d.info.name));
            const DeviceEntry* same = nullptr;
            for (const DeviceEntry* s : shown)
                if (d.info.has_uuid && s->info.has_uuid && std::memcmp(s->info.uuid, d.info.uuid, 16) == 0) same = s;
            if (same) {
                row.detail = QStringLiteral("the same device as %1 %2").arg(backendTitle(same->backend)).arg(same->index);
            } else {
                shown.push_back(&d);
                row.detail = typeName(d.info.type);
                if (d.info.memory_total)
                    row.detail += QStringLiteral(", %1").arg(QString::fromStdString(app::format_bytes(d.info.memory_total)));
            }
            rows_.push_back(row);
        }
        if (!any) {
            const char* why = m.api->unavailable_reason ? m.api->unavailable_reason() : nullptr;
            rows_.push_back({backendTitle(m.name),
                             QStringLiteral("no devices: %1").arg(why && *why ? QString::fromUtf8(why)
                                                                              : QStringLiteral("the backend reports none")),
                             QString(), 0, false});
        }
    }
    for (const LoadError& e : registry.load_errors())
        rows_.push_back({QString::fromStdString(e.path), QStringLiteral("failed to load: %1").arg(QString::fromStdString(e.reason)),
                         QString(), 0, false});
    for (const char* known : {"vulkan", "cuda"})
        if (!registry.find(known))
            rows_.push_back({backendTitle(known),
                             QStringLiteral("not in this build: no libmnemo-backend-%1 module was found").arg(QLatin1String(known)),
                             QString(), 0, false});
    DeviceRow server{QStringLiteral("Server (mnemo serve)…"), kServerDetail, QString(), 0, true};
    server.isServer = true;
    rows_.push_back(server);
}

void DeviceModel::setServerDetail(const QString& detail) {
    const int row = serverRow();
    rows_[row].detail = detail.isEmpty() ? QString(kServerDetail) : detail;
    Q_EMIT dataChanged(index(row), index(row), {DetailRole});
}

void DeviceModel::setFastestDetail(const QString& detail) {
    rows_[kFastestRow].detail = detail.isEmpty() ? QString(kFastestDetail) : detail;
    Q_EMIT dataChanged(index(kFastestRow), index(kFastestRow), {DetailRole});
}

QList<DeviceRow> DeviceModel::choosable() const {
    QList<DeviceRow> out;
    for (const DeviceRow& r : rows_)
        if (r.enabled && !r.isFastest && !r.isServer) out << r;
    return out;
}

int DeviceModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

QVariant DeviceModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size()) return {};
    const DeviceRow& r = rows_.at(index.row());
    switch (role) {
        case Qt::DisplayRole:
        case LabelRole: return r.label;
        case DetailRole: return r.detail;
        case BackendRole: return r.backend;
        case DeviceRole: return r.device;
        case EnabledRole: return r.enabled;
        default: return {};
    }
}

QHash<int, QByteArray> DeviceModel::roleNames() const {
    return {{LabelRole, "label"}, {DetailRole, "detail"}, {BackendRole, "backend"}, {DeviceRole, "device"}, {EnabledRole, "enabled"}};
}

int DeviceModel::rowOf(const QString& backend, int device) const {
    for (int i = 0; i < rows_.size(); ++i)
        if (rows_.at(i).enabled && rows_.at(i).backend == backend && rows_.at(i).device == device) return i;
    return -1;
}

}  // namespace mnemo::gui
