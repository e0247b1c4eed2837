// The device picker's rows from a registry: devices that can be chosen, and the reason for each
// backend that has none.
#include <QTest>

#include "fastest_device/fastest_device.hpp"
#include "devices/device_model.hpp"
#include "gui_test_util.hpp"

using namespace mnemo;
using namespace mnemo::gui;

class TestDeviceModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void listsDevicesAndWhyOthersAreMissing() {
        // The CPU backend and a test module that finds no hardware.
        const BackendRegistry reg({MNEMO_BUILD_BIN "/libmnemo-backend-cpu.so", MNEMO_TEST_MODULES "/mnemo-backend-nodevice"});
        QVERIFY(reg.find("cpu") && reg.find("nodevice"));
        DeviceModel m(reg);
        QCOMPARE(m.at(0).label, QStringLiteral("Fastest (measured)"));
        QVERIFY(m.at(0).enabled && m.at(0).isFastest);
        QVERIFY(m.at(0).detail.contains(QStringLiteral("measured")));
        for (const DeviceRow& r : m.choosable()) QVERIFY(r.enabled && !r.isFastest && !r.backend.isEmpty());
        const int cpu = m.rowOf(QStringLiteral("cpu"), 0);
        QVERIFY(cpu > 0);
        QVERIFY(m.at(cpu).label.startsWith(QStringLiteral("CPU 0: ")));
        QVERIFY(m.at(cpu).detail.startsWith(QStringLiteral("cpu device, ")));  // with its memory
        QStringList disabled;
        for (int i = 1; i < m.rowCount(); ++i)
            if (!m.at(i).enabled) disabled << m.at(i).label + QStringLiteral(": ") + m.at(i).detail;
        QVERIFY2(disabled.contains(QStringLiteral("nodevice: no devices: simulated: no hardware")), qPrintable(disabled.join('\n')));
        QVERIFY2(disabled.contains(QStringLiteral("Vulkan: not in this build: no libmnemo-backend-vulkan module was found")),
                 qPrintable(disabled.join('\n')));
        QCOMPARE(m.rowOf(QStringLiteral("nodevice"), 0), -1);
        // The server entry: last, choosable, never benchmarked by Fastest nor a device of a backend.
        const DeviceRow& server = m.at(m.serverRow());
        QVERIFY(server.isServer && server.enabled && server.backend.isEmpty());
        QVERIFY(server.label.startsWith(QStringLiteral("Server (mnemo serve)")));
        for (const DeviceRow& r : m.choosable()) QVERIFY(!r.isServer);
        m.setServerDetail(QStringLiteral("in use: m at http://h:1/v1"));
        QCOMPARE(m.at(m.serverRow()).detail, QStringLiteral("in use: m at http://h:1/v1"));
    }

    void fastestPicksTheQuickestThatRanAndItsFiguresSurviveTheCache() {
        const QList<DeviceMeasurement> measured{{QStringLiteral("cpu"), 0, QStringLiteral("CPU 0: EPYC"), 120.5, {}},
                                                {QStringLiteral("vulkan"), 0, QStringLiteral("Vulkan 0: big"), 0.0, QStringLiteral("out of memory")},
                                                {QStringLiteral("vulkan"), 1, QStringLiteral("Vulkan 1: small"), 80.0, {}}};
        const FastestChoice c = pickFastest(measured);
        QVERIFY(c.valid());
        QCOMPARE(c.backend, QStringLiteral("cpu"));  // the fastest that fits; the one that did not run never wins
        QVERIFY2(c.figuresText().contains(QStringLiteral("CPU 0: EPYC 120.5 tokens/s (chosen)")) &&
                     c.figuresText().contains(QStringLiteral("Vulkan 0: big does not fit: out of memory")),
                 qPrintable(c.figuresText()));
        const QList<DeviceMeasurement> back = measurementsFromText(measurementsToText(measured));
        QCOMPARE(back.size(), 3);
        QCOMPARE(back[2].tokensPerSecond, 80.0);
        QCOMPARE(back[1].error, QStringLiteral("out of memory"));
        QCOMPARE(pickFastest(back).backend, QStringLiteral("cpu"));
        QVERIFY(measurementsFromText(QStringLiteral("not\tfigures")).isEmpty());
        QVERIFY(!pickFastest({measured[1]}).valid());
    }

    void listsTheVulkanDevicesOfThisBuild() {
        const QString why = mnemo::gui::test::noVulkanReason();
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        DeviceModel m;  // the modules next to the program, as the app sees them
        const int vk = m.rowOf(QStringLiteral("vulkan"), 0);
        QVERIFY(vk > 0);
        QVERIFY2(m.at(vk).label.startsWith(QStringLiteral("Vulkan 0: ")), qPrintable(m.at(vk).label));
        QVERIFY(m.rowOf(QStringLiteral("cpu"), 0) > 0);
    }
};

QTEST_GUILESS_MAIN(TestDeviceModel)
#include "test_device_model.moc"
