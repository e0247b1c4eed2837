// A worker QObject that lives on a QThread of its own for as long as its owner does: moved there
// at construction and deleted on that thread when it ends. The owner's destructor first asks the
// worker to stop (an atomic flag its loop checks, so a generation or a comparison in flight ends at
// its next step) and only then joins the thread, which therefore never blocks on a long run.
#pragma once

#include <QObject>
#include <QString>
#include <QThread>

namespace mnemo::gui {

template <typename Worker>
class OwnedThread {
public:
    using Stop = void (Worker::*)(quint64 id);  // stops every run up to `id`; callable from any thread

    OwnedThread(const char* name, Stop stop) : worker_(new Worker), stop_(stop) {
        thread_.setObjectName(QString::fromLatin1(name));
        worker_->moveToThread(&thread_);
        QObject::connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
        thread_.start();
    }
    ~OwnedThread() {
        (worker_->*stop_)(~quint64{0});
        thread_.quit();
        thread_.wait();
    }
    OwnedThread(const OwnedThread&) = delete;
    OwnedThread& operator=(const OwnedThread&) = delete;

    Worker* worker() const { return worker_; }

private:
    QThread thread_;
    Worker* worker_;
    Stop stop_;
};

}  // namespace mnemo::gui
