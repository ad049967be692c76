// What the bundle tests share: a filled cache and a whole-cache export request.
#ifndef JITGEMM_TESTS_TOOLS_BUNDLE_FIXTURE_H_
#define JITGEMM_TESTS_TOOLS_BUNDLE_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cache/bundle.h"
#include "cache/disk_cache.h"
#include "gtest/gtest.h"
#include "tests/cache/test_util.h"

namespace jitgemm::cache {

struct Stored {
  EntryKind kind;
  CacheKey key;
  std::string payload;
};

// A cache at `root` with `n` kernels for sm_90a and two tuning records.
inline std::vector<Stored> Fill(const std::string& root, int n) {
  std::shared_ptr<DiskCache> c = DiskCache::Open(testing::TestSettings(root));
  std::vector<Stored> out;
  for (int i = 0; i < n; ++i) {
    CacheKey key =
        MakeCacheKey(absl::StrCat("jitgemm-kernel-key\nabi=1\nnvrtc=13000\narch=sm_90a\n"
                                  "sources=feed\nname=k",
                                  i, "\n"));
    out.push_back({EntryKind::kCubin, key, testing::PayloadFor(key.text, 3000 + 17 * i)});
  }
  for (const char* problem : {"p1", "p2"}) {
    CacheKey key = MakeCacheKey(absl::StrCat("jitgemm-tuning-key v1\nproblem=", problem, "\n"));
    out.push_back({EntryKind::kTuningRecord, key, absl::StrCat("{\"winner\":\"", problem, "\"}")});
  }
  for (const Stored& s : out) c->Store(s.key, s.kind, s.payload);
  EXPECT_EQ(c->counters().stores, out.size());
  return out;
}

inline ExportRequest WholeCache(const std::string& root, const std::string& out) {
  ExportRequest req;
  req.roots = {root};
  req.out = out;
  req.created_by = "bundle_test";
  req.library_version = "0.0.0";
  req.selection = "whole cache";
  req.created_at = absl::FromUnixSeconds(1700000000);
  return req;
}

}  // namespace jitgemm::cache

#endif  // JITGEMM_TESTS_TOOLS_BUNDLE_FIXTURE_H_
