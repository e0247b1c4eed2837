// How a mnemo_tests process that runs a group of tests (one ctest test: a suite, a backend's
// conformance cases; tests/CMakeLists.txt) tells ctest what happened, when ctest sets
// MNEMO_TEST_SKIP_STATUS (the group's SKIP_RETURN_CODE):
//   - every selected test skipped (a backend with no device, a missing tool): exit with that
//     status, so ctest reports the group as skipped, with the reasons in its output;
//   - no test matched the filter (a backend module that was not built or failed to load): exit 1,
//     never a silent pass;
//   - otherwise GoogleTest's own status, after a summary line that names every failed test.
// Without the variable (mnemo_tests run by hand) nothing changes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

class ExitStatus : public testing::EmptyTestEventListener {
public:
    explicit ExitStatus(int skip_status) : skip_status_(skip_status) {}

    void OnTestProgramEnd(const testing::UnitTest& u) override {
        std::fflush(stdout);
        if (u.test_to_run_count() == 0) {
            std::fprintf(stderr, "mnemo_tests: no test matches the filter '%s' (a backend module not built or not loading?)\n",
                         GTEST_FLAG_GET(filter).c_str());
            std::fflush(stderr);
            std::_Exit(1);
        }
        if (u.failed_test_count() > 0) {
            std::string names;
            for (int i = 0; i < u.total_test_suite_count(); ++i) {
                const testing::TestSuite* s = u.GetTestSuite(i);
                for (int j = 0; j < s->total_test_count(); ++j) {
                    const testing::TestInfo* t = s->GetTestInfo(j);
                    if (t->should_run() && t->result()->Failed()) names += std::string(" ") + s->name() + "." + t->name();
                }
            }
            std::printf("mnemo_tests: %d of %d tests FAILED:%s\n", u.failed_test_count(), u.test_to_run_count(), names.c_str());
            std::fflush(stdout);
            return;
        }
        if (u.skipped_test_count() == u.test_to_run_count()) {
            std::printf("mnemo_tests: all %d tests skipped (reasons above)\n", u.test_to_run_count());
            std::fflush(stdout);
            std::_Exit(skip_status_);
        }
    }

private:
    int skip_status_;
};

// Registered before main runs (gtest_main's InitGoogleTest keeps listeners already appended).
const bool registered = [] {
    const char* status = std::getenv("MNEMO_TEST_SKIP_STATUS");
    if (status && *status) testing::UnitTest::GetInstance()->listeners().Append(new ExitStatus(std::atoi(status)));
    return true;
}();

}  // namespace
