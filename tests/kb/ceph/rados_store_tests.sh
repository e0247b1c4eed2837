#!/usr/bin/env bash
# kb.rados_store: the BankStorage contract and a whole bank through the RADOS store
# (tests/test_kb_storage_contract.cpp's "rados" cases, which skip without a cluster), run against a
# one-machine cluster this script starts (micro_ceph.sh) and stops.
#   rados_store_tests.sh MNEMO_TESTS_BINARY WORK_DIR
# Exit 77 (ctest: skipped, with the reason) without the Ceph programs.
set -euo pipefail
tests=${1:?usage: rados_store_tests.sh MNEMO_TESTS_BINARY WORK_DIR}
work=${2:?usage: rados_store_tests.sh MNEMO_TESTS_BINARY WORK_DIR}
micro_ceph=$(cd "$(dirname "$0")" && pwd)/micro_ceph.sh
cluster=$work/cluster
command -v ceph-osd >/dev/null || { echo "SKIP: ceph-osd is not installed (scripts/install-deps.sh --tests)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
trap '"$micro_ceph" stop "$cluster" >/dev/null 2>&1 || true' EXIT
status=0
"$micro_ceph" start "$cluster" --osds 2 --owner $$ --lifetime 600 || status=$?
[ "$status" = 0 ] || { [ "$status" = 77 ] && exit 77; echo "FAIL: micro_ceph.sh start failed ($status)"; exit 1; }
# Only the RADOS cases: the folder ones run in the unit group. A case skipped here means the
# store is not reachable, which this test must not report as passed: fail on any skip.
out=$work/gtest.log
MNEMO_TEST_CEPH_CONF=$cluster/ceph.conf MNEMO_TEST_CEPH_USER=mnemo MNEMO_TEST_CEPH_POOL=mnemo \
  timeout 400 "$tests" --gtest_filter='*KbStorageContract.*/rados:KbStoreLocation.*' 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || { echo "FAIL: mnemo_tests exited $status"; exit 1; }
if grep -q "SKIPPED" "$out"; then echo "FAIL: a RADOS case was skipped with a cluster running"; exit 1; fi
grep -q "PASSED" "$out" || { echo "FAIL: no test ran"; exit 1; }
